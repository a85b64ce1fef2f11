import type { ServerResponse } from 'node:http';

/**
 * The one way the sidecar (proxy, admin, simulator) answers with JSON: an exact Content-Length,
 * `no-store` (error and probe answers describe this instant). When headers already went out the
 * only honest signal left is to cut the connection.
 */
export function sendJsonBody(res: ServerResponse, status: number, body: unknown, headers?: Record<string, string>): void {
  sendText(res, status, 'application/json; charset=utf-8', JSON.stringify(body), headers);
}

/** Answers with the API's ErrorMessage shape `{"message": ...}`. */
export function sendJson(res: ServerResponse, status: number, message: string, headers?: Record<string, string>): void {
  sendJsonBody(res, status, { message }, headers);
}

/** Any text body (the Prometheus exposition format) with the same framing. */
export function sendText(res: ServerResponse, status: number, contentType: string, body: string, headers?: Record<string, string>): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (res.destroyed) return;
  res.writeHead(status, {
    ...headers,
    'content-type': contentType,
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
  });
  res.end(body); // Node sends no body for HEAD
}
