/**
 * Parses an HTTP `Retry-After` value (RFC 9110 §10.2.3): delay-seconds or an HTTP-date.
 * Returns the wait in milliseconds from `wallNowMs`, at least 0 and at most `capMs`, or undefined
 * when the value is absent or malformed (then the ordinary backoff applies).
 */
export function parseRetryAfter(value: string | undefined, wallNowMs: number, capMs: number): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (v === '') return undefined;
  let ms: number;
  if (/^\d+$/.test(v)) {
    ms = Number(v) * 1000;
  } else {
    // Only a date with a weekday and a time zone: Date.parse accepts too much ("1", "soon 5").
    if (!/^[A-Za-z]{3},? /.test(v) || !/(GMT|UTC|[+-]\d{4})$/.test(v)) return undefined;
    const at = Date.parse(v);
    if (!Number.isFinite(at)) return undefined;
    ms = at - wallNowMs;
  }
  if (!Number.isFinite(ms)) return undefined;
  return Math.min(Math.max(ms, 0), capMs);
}
