import type { SetPart } from '../service/service-part.js';
import type { Part } from '../shared/part.js';
import { need, type Made } from './made.js';

/**
 * The last step: every credential set's token loop starts, and its credential files are watched
 * (a change re-reads that set's files and switches that set to a token obtained with them). Stopped
 * by the service part's own stops.
 */
export function tokenRenewalPart(made: Made, onCredentialsChanged: (set: SetPart) => void): Part {
  return {
    name: 'token renewal',
    start() {
      const service = need(made.service, 'the service part');
      for (const set of service.sets) {
        set.tokens.start();
        set.credentials.watch(() => onCredentialsChanged(set));
      }
    },
  };
}
