import { InvalidResponseError } from '../shared/errors.js';
import { loadConfigOrExit } from './config-problems.js';
import { SecretSet } from '../shared/secrets.js';
import { openUpstream, type Upstream } from '../upstream/open-upstream.js';
import { localizationClientOn, type LocalizationClient } from '../localization/localization-client.js';
import { LocalizationError, TranslationRefError } from '../localization/localization-errors.js';
import { formatTranslationSummary } from '../localization/summary.js';
import { createTokenSource } from '../localization/weblate-token.js';
import { parseTranslationRef, type TranslationRef } from '../config/translation-ref.js';
import type { CommandIo } from './io.js';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from './exit-codes.js';

/**
 * `b2b-sidecar translation <project>/<component>/<language> --config FILE [--json]`: looks up
 * one translation and prints a summary, or with `--json` the validated translation object.
 * Exit 0 on success; 1 when not found, unauthorized, throttled, unreachable or malformed (with
 * the server's reason); 2 for a bad reference, invalid configuration or no `localization` section.
 */
export async function translationCommand(
  args: { ref: string; config?: string; json?: boolean },
  io: CommandIo,
): Promise<number> {
  const fail = (code: number, message: string) => {
    io.stderr.write(`translation: ${message}\n`);
    return code;
  };
  let ref: TranslationRef;
  try {
    ref = parseTranslationRef(args.ref);
  } catch (err) {
    if (err instanceof TranslationRefError) return fail(EXIT_USAGE, err.message);
    throw err;
  }

  const config = await loadConfigOrExit(args.config, io);
  if (typeof config === 'number') return config;
  let client: LocalizationClient;
  let upstream: Upstream;
  const secrets = new SecretSet();
  try {
    const l10n = config.localization;
    if (!l10n) {
      return fail(EXIT_USAGE, 'the configuration has no localization section (localization.baseUrl is needed for lookups)');
    }
    // One lookup: read the token once, no file watcher to keep the process alive.
    const token = createTokenSource(l10n, { secrets, watch: false });
    upstream = await openUpstream('localization', l10n, { env: io.env, secrets });
    try {
      client = localizationClientOn(upstream, token);
    } catch (err) {
      await upstream.close();
      throw err;
    }
  } catch (err) {
    return fail(EXIT_USAGE, `invalid localization configuration: ${secrets.redact((err as Error).message)}`);
  }

  try {
    const { translation } = await client.getTranslation(ref);
    io.stdout.write(args.json ? `${JSON.stringify(translation, null, 2)}\n` : formatTranslationSummary(translation, ref));
    return EXIT_OK;
  } catch (err) {
    if (err instanceof LocalizationError || err instanceof InvalidResponseError) {
      return fail(EXIT_FAILURE, secrets.redact(err.message));
    }
    throw err;
  } finally {
    await upstream.close();
  }
}
