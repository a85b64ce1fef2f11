import { ATTACHMENT_KINDS, KIND_FIELDS, isAttachmentKind, placeOf, unhandledAttachmentKind, type Attachment, type AttachmentKind } from '../shared/attachment.js';
import { isRecord, type Report } from './walk.js';

/**
 * Checks of `token.attach`: every entry must produce something the HTTP client will send.
 * Node's http and undici refuse a header whose name is not an RFC 9110 token or whose value has
 * characters outside visible ASCII, space, tab and obs-text (0x80-0xFF): the request then fails
 * at request time, every proxied request gets 502 and /readyz still says ready.
 */

const PLACEHOLDERS = new Set(['token', 'apiKey', 'rkObjectId']);
/** Kinds whose names must be RFC 9110 tokens (a query parameter name is URL-encoded instead). */
const NAME_IS_TOKEN: ReadonlySet<AttachmentKind> = new Set(['header', 'cookie']);
/** RFC 9110 `token` characters, the only ones allowed in header and cookie names. */
const TOKEN_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** RFC 9110 field-value characters as Node (`checkInvalidHeaderChar`) and undici check them. */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
/** Headers an attachment must not set: hop-by-hop (RFC 9110 §7.6.1), message framing or Expect (docs/traps.md T2). */
const FORBIDDEN_HEADERS = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization',
  'te', 'trailer', 'transfer-encoding', 'upgrade', 'host', 'content-length', 'expect',
]);

/** Describes the first character of `text` outside `allowed`, e.g. `“ (U+201C) at character 1`. */
export function firstBadChar(text: string, allowed: RegExp): string | undefined {
  let i = 0;
  for (const ch of text) {
    i++;
    if (!allowed.test(ch)) {
      const code = `U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
      const shown = /[\p{L}\p{N}\p{P}\p{S}]/u.test(ch) ? `${ch} (${code})` : code;
      return `${shown} at character ${i}`;
    }
  }
  return undefined;
}

/** A typographic quote gets its own hint: it is what mail clients and word processors paste. */
function valueHint(text: string): string {
  return /[\u2018\u2019\u201a\u201b\u201c\u201d\u201e\u201f\u00ab\u00bb]/.test(text)
    ? ' (a typographic quote: leave the value unquoted or use plain " in YAML)'
    : '';
}

export function checkAttach(list: unknown, rkObjectId: unknown, report: Report): void {
  if (!Array.isArray(list)) return;
  if (list.length === 0) return report(['token', 'attach'], 'is empty: nothing would carry the token to the service; leave it out for the default');
  const seen = new Map<string, number>();
  let carriesToken = false;
  list.forEach((entry, i) => {
    if (!isRecord(entry)) return;
    const base = ['token', 'attach', i];
    const { in: where, name } = entry;
    // An unknown kind is the schema's problem (reported with the allowed values); its value is still a template.
    const templates = isAttachmentKind(where) ? checkFields(entry, where, (field, reason) => report([...base, field], reason)) : ['value'];
    for (const field of templates) {
      const template = entry[field];
      if (typeof template !== 'string') continue;
      if (template.replace(/\$\{token\}/g, '').includes('{token}')) carriesToken = true;
      checkValue(template, where, field, rkObjectId, (reason) => report([...base, field], reason));
    }
    if (!isAttachmentKind(where)) return;
    if (typeof name === 'string' && NAME_IS_TOKEN.has(where) && !TOKEN_NAME.test(name)) {
      const bad = firstBadChar(name, /[!#$%&'*+.^_`|~0-9A-Za-z-]/);
      report([...base, 'name'], `"${name}" is not a valid ${where} name${bad ? `: ${bad} is not allowed (letters, digits and !#$%&'*+-.^_\`|~ only)` : ''}`);
    } else if (typeof name === 'string' && where === 'header' && FORBIDDEN_HEADERS.has(name.toLowerCase())) {
      report([...base, 'name'], `${name} is a hop-by-hop or framing header the proxy manages; it cannot be attached`);
    }
    if (!(KIND_FIELDS[where].required as readonly string[]).every((field) => typeof entry[field] === 'string')) return;
    // What the entry sets (a Basic entry sets the Authorization header): set twice, one would be lost.
    const place = placeOf(entry as unknown as Attachment);
    const id = place.in === 'header' ? `header ${place.name.toLowerCase()}` : `${place.in} ${place.name}`;
    const first = seen.get(id);
    if (first !== undefined) report([...base, typeof name === 'string' ? 'name' : 'in'], `duplicates token.attach[${first}] (${place.in} ${place.name})`);
    else seen.set(id, i);
  });
  if (!carriesToken) report(['token', 'attach'], 'no entry has {token} in its value: the service would never see the token');
}

/** Every field any kind has (besides `in`). */
const ALL_FIELDS = [...new Set(ATTACHMENT_KINDS.flatMap((kind) => KIND_FIELDS[kind].required as readonly string[]))];

/**
 * The fields `where` needs are present and no other kind's field is (the one entry schema allows
 * every kind's fields); returns the entry's template fields.
 */
function checkFields(entry: Record<string, unknown>, where: AttachmentKind, problem: (field: string, reason: string) => void): readonly string[] {
  const { required, templates } = KIND_FIELDS[where] as { required: readonly string[]; templates: readonly string[] };
  for (const field of required) if (entry[field] === undefined) problem(field, 'is required');
  for (const field of ALL_FIELDS) {
    if (!required.includes(field) && entry[field] !== undefined) problem(field, `is not a field of a ${where} entry (it has ${required.join(' and ')})`);
  }
  return templates;
}

/**
 * The template, and what is known of the values substituted into it: the token and ApiKey are
 * visible ASCII (checked when they arrive), rkObjectId is in the config and checked here.
 */
function checkValue(value: string, where: unknown, field: string, rkObjectId: unknown, problem: (reason: string) => void): void {
  // A Basic pair may have an empty password (a token given as the user, RFC 7617 allows it).
  if (value === '') return where === 'basic' && field === 'password' ? undefined : problem('is empty: the entry would send nothing');
  for (const [, placeholder] of value.matchAll(/\$\{([^{}]*)\}/g)) {
    if (PLACEHOLDERS.has(placeholder!)) problem(`\${${placeholder}} is shell syntax and would be sent literally: did you mean {${placeholder}}?`);
  }
  for (const [, placeholder] of value.matchAll(/\{([^{}]*)\}/g)) {
    if (!PLACEHOLDERS.has(placeholder!)) {
      problem(`unknown placeholder {${placeholder}} (known: {token}, {apiKey}, {rkObjectId})`);
    } else if (placeholder === 'rkObjectId' && rkObjectId === undefined) {
      problem('uses {rkObjectId} but credentials.rkObjectId (B2B_RK_OBJECT_ID) is not set');
    }
  }
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/.test(value)) return problem('must not contain control characters (CR, LF, ...)');
  if (isAttachmentKind(where)) checkKindValue(where, field, value, rkObjectId, problem);
  // Query and cookie values are URL-encoded, which throws on a lone surrogate.
  if (LONE_SURROGATE.test(value)) problem('is not well-formed Unicode (a lone surrogate)');
  if (value.includes('{rkObjectId}') && typeof rkObjectId === 'string' && LONE_SURROGATE.test(rkObjectId)) {
    problem('uses credentials.rkObjectId (B2B_RK_OBJECT_ID), which is not well-formed Unicode (a lone surrogate)');
  }
}

/** What each kind can carry in its template `field`; an exhaustive switch, so a new kind must say. */
function checkKindValue(where: AttachmentKind, field: string, value: string, rkObjectId: unknown, problem: (reason: string) => void): void {
  switch (where) {
    case 'header': {
      const bad = firstBadChar(value, FIELD_VALUE);
      if (bad) problem(`contains ${bad}, which an HTTP header cannot carry${valueHint(value)}`);
      if (value.includes('{rkObjectId}') && typeof rkObjectId === 'string') {
        const badId = firstBadChar(rkObjectId, /[\x20-\x7e\x80-\xff]/);
        if (badId) problem(`puts credentials.rkObjectId (B2B_RK_OBJECT_ID) in a header, but it contains ${badId}, which a header cannot carry`);
      }
      return;
    }
    case 'cookie':
      if (/[\s",;\\]/.test(value)) problem('a cookie value must not contain spaces, quotes, commas, semicolons or backslashes');
      return;
    case 'query':
      return; // URL-encoded when attached
    case 'basic':
      // RFC 7617: the first colon ends the user; the pair is UTF-8 then base64, so any other text goes.
      if (field === 'user' && value.replace(/\{[^{}]*\}/g, '').includes(':')) problem('the user of a basic entry must not contain a colon (RFC 7617: the first one ends it)');
      return;
    default:
      unhandledAttachmentKind(where);
  }
}
