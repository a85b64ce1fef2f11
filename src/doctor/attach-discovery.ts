import { stringify } from 'yaml';
import type { Attachment } from '../config/schema.js';
import type { DoctorStep } from './doctor-report.js';
import { probeWith, type ProbeTarget } from './probe-check.js';

/**
 * Token presentations worth trying: the API description does not say how the token travels
 * (config/b2b-auth.swagger.yaml documents only the ApiKey header), and these are the common ones. Each is tried with the ApiKey header first (the
 * description's security scheme applies to every operation) and then without.
 */
export const PRESENTATIONS: ReadonlyArray<{ label: string; attach: Attachment }> = [
  { label: 'Authorization: Bearer {token}', attach: { in: 'header', name: 'Authorization', value: 'Bearer {token}' } },
  { label: 'Authorization: {token}', attach: { in: 'header', name: 'Authorization', value: '{token}' } },
  { label: 'AuthToken: {token}', attach: { in: 'header', name: 'AuthToken', value: '{token}' } },
  { label: 'Token: {token}', attach: { in: 'header', name: 'Token', value: '{token}' } },
  { label: 'X-Auth-Token: {token}', attach: { in: 'header', name: 'X-Auth-Token', value: '{token}' } },
  { label: '?token={token}', attach: { in: 'query', name: 'token', value: '{token}' } },
];
const API_KEY: Attachment = { in: 'header', name: 'ApiKey', value: '{apiKey}' };

/** Every candidate `token.attach` list, in the order tried: 12 requests at most. */
export function discoveryCandidates(): Array<{ label: string; attach: Attachment[] }> {
  return PRESENTATIONS.flatMap((p) => [
    { label: `${p.label} + ApiKey`, attach: [p.attach, API_KEY] },
    { label: `${p.label} without ApiKey`, attach: [p.attach] },
  ]);
}

/**
 * Step 5: tries each candidate on the probe path, one after another (GET only, redirects never
 * followed). Accepted means any status but 401/403. The first accepted candidate becomes the
 * `token.attach` block to paste.
 */
export async function discoverAttach(target: ProbeTarget): Promise<DoctorStep> {
  const url = `${target.base}${target.path}`;
  const candidates = discoveryCandidates();
  const accepted: Array<{ label: string; attach: Attachment[]; status: number }> = [];
  const failures: string[] = [];
  for (const c of candidates) {
    try {
      const { status } = await probeWith(target, c.attach);
      if (status !== 401 && status !== 403) accepted.push({ ...c, status });
    } catch (err) {
      failures.push(`${c.label}: ${(err as { code?: string }).code ?? (err as Error).message}`);
    }
  }
  const tried = `GET ${url} with ${candidates.length} presentations`;
  const failed = failures.length ? `; ${failures.length} failed without an answer (${failures[0]})` : '';
  if (accepted.length === 0) {
    return {
      step: 'discover-attach', ok: false, url, accepted: [],
      detail: `${tried}: none accepted (all 401/403)${failed}`,
      hint: 'the service wants the token some other way, or the probe path needs more than a token: ask the support team how the token is presented',
    };
  }
  const attach = accepted[0]!.attach;
  return {
    step: 'discover-attach', ok: true, url,
    accepted: accepted.map((a) => a.label),
    detail: `${tried}: accepted ${accepted.map((a) => `${a.label} (${a.status})`).join('; ')}${failed}`,
    attach,
    attachYaml: stringify({ token: { attach } }),
  };
}
