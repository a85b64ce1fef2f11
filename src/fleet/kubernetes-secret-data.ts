import { parseRecord, type FleetRecord } from './fleet-record.js';

/**
 * The Secret's data keys (docs/fleet.md, "Kubernetes"): the record of key K in data key K, its
 * renewal claim in K.claim, each the base64 of a JSON object (Secret data is base64 on the wire).
 * Values that do not decode are read as absent: the next publish or claim replaces them.
 */
export const CLAIM_SUFFIX = '.claim';

/** A renewal claim: who holds it, until when (wall clock, ms). */
export interface Claim {
  holder: string;
  untilWall: number;
}

/** A data value: base64 of the text. */
export function encode(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64');
}

function decode(value: string | undefined): unknown {
  if (typeof value !== 'string') return undefined;
  try {
    return JSON.parse(Buffer.from(value, 'base64').toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

/** The record a data value holds, or undefined. */
export function recordOf(value: string | undefined): FleetRecord | undefined {
  return parseRecord(decode(value));
}

/** The claim a data value holds, or undefined. */
export function claimOf(value: string | undefined): Claim | undefined {
  const claim = decode(value) as Partial<Claim> | undefined;
  if (typeof claim?.holder !== 'string' || typeof claim.untilWall !== 'number') return undefined;
  return { holder: claim.holder, untilWall: claim.untilWall };
}
