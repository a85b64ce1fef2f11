/**
 * The slope of a measure over time by least squares, with its standard error, for the soak's
 * verdict: a bound is missed only when the slope minus twice its standard error is above it, so a
 * noisy short run is not read as growth, and a clear slope is not hidden by the noise.
 */
export interface Trend {
  /** Units per hour. */
  slopePerHour: number;
  /** Standard error of the slope, units per hour (NaN with fewer than 3 samples). */
  stderrPerHour: number;
  samples: number;
}

/** `points` as [seconds, value]; the slope is returned per hour. */
export function trend(points: ReadonlyArray<readonly [number, number]>): Trend {
  const n = points.length;
  if (n < 2) return { slopePerHour: NaN, stderrPerHour: NaN, samples: n };
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  let sxx = 0;
  let sxy = 0;
  for (const [x, y] of points) {
    sxx += (x - mx) ** 2;
    sxy += (x - mx) * (y - my);
  }
  if (sxx === 0) return { slopePerHour: NaN, stderrPerHour: NaN, samples: n };
  const slope = sxy / sxx;
  let sse = 0;
  for (const [x, y] of points) sse += (y - (my + slope * (x - mx))) ** 2;
  const stderr = n > 2 ? Math.sqrt(sse / (n - 2) / sxx) : NaN;
  return { slopePerHour: slope * 3600, stderrPerHour: stderr * 3600, samples: n };
}
