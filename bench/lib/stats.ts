export function median(values: readonly number[]): number | undefined {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return undefined;
  const mid = v.length >> 1;
  return v.length % 2 ? v[mid] : (v[mid - 1]! + v[mid]!) / 2;
}

export function min(values: readonly number[]): number | undefined {
  const v = values.filter((x) => Number.isFinite(x));
  return v.length ? Math.min(...v) : undefined;
}

export function max(values: readonly number[]): number | undefined {
  const v = values.filter((x) => Number.isFinite(x));
  return v.length ? Math.max(...v) : undefined;
}

/** Fixed decimals, or an em dash for a missing value. */
export function fmt(value: number | undefined, digits = 0): string {
  return value === undefined || !Number.isFinite(value) ? '—' : value.toFixed(digits);
}

export function ratio(a: number | undefined, b: number | undefined, digits = 2): string {
  return a === undefined || b === undefined || !b ? '—' : `${(a / b).toFixed(digits)}×`;
}
