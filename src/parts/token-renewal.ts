import type { Part } from '../shared/part.js';
import { need, type Made } from './made.js';

/**
 * The last step: the token loop starts, and the credential files are watched (a change re-reads
 * them and switches to a token obtained with them). Stopped by the service part's own stops.
 */
export function tokenRenewalPart(made: Made, onCredentialsChanged: () => void): Part {
  return {
    name: 'token renewal',
    start() {
      const service = need(made.service, 'the service part');
      service.tokens.start();
      service.credentials.watch(onCredentialsChanged);
    },
  };
}
