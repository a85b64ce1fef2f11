import type { Report } from './walk.js';

type Section = Record<string, unknown>;

/** `fleet`: the keys the chosen store needs; a Redis URL without a password in it (docs/fleet.md). */
export function checkFleet(fleet: Section, report: Report): void {
  const store = fleet.store;
  const need = (key: string, what: string) => {
    if (typeof fleet[key] !== 'string' || fleet[key] === '') report(['fleet', key], `is required with fleet.store ${String(store)} (${what})`);
  };
  if (store === 'sqlite') need('sqlitePath', 'the database file the processes share');
  if (store === 'redis') need('redisUrl', 'redis://host:port, rediss://host:port or unix:///path');
  if (store === 'kubernetes') need('kubernetesSecret', 'the name of the pre-created Secret');
  const url = fleet.redisUrl;
  if (typeof url === 'string' && url !== '') {
    let parsed: URL | undefined;
    try {
      parsed = new URL(url);
    } catch {
      // The value is not echoed: it may carry a password.
      report(['fleet', 'redisUrl'], 'is not a URL (expected redis://host:port, rediss://host:port or unix:///path)');
    }
    if (parsed?.password) report(['fleet', 'redisUrl'], 'must not contain a password: put it in fleet.redisPasswordFile (an ACL user name may stay in the URL)');
  }
}
