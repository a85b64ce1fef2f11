import type { ServerResponse } from 'node:http';

/**
 * Answers with the API's ErrorMessage shape `{"message": ...}`. When headers already went out
 * the only honest signal left is to cut the connection.
 */
export function sendJson(res: ServerResponse, status: number, message: string, headers?: Record<string, string>): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = JSON.stringify({ message });
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
  });
  res.end(body);
}
