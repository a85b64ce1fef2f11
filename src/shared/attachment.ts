/**
 * The ways a credential can be attached to a proxied request (`token.attach[].in`). The one list
 * every part builds on: the config schema's union, the proxy's `compileAttachments` and the
 * config checks all switch over it with an exhaustive `never` default, so adding a kind here is a
 * compile error at each place that must learn to handle it (docs/architecture.md, "An
 * attachment kind").
 */
export const ATTACHMENT_KINDS = ['header', 'query', 'cookie', 'basic'] as const;
export type AttachmentKind = (typeof ATTACHMENT_KINDS)[number];

/** A kind that carries one named value: `value` is a template with {token}, {apiKey} and {rkObjectId}. */
interface Named<K extends AttachmentKind> {
  in: K;
  name: string;
  value: string;
}

/**
 * The shape of each kind's `token.attach` entry. Every field of every kind is a key of the one
 * entry schema (config/schema.ts); which ones a kind needs is {@link KIND_FIELDS}.
 */
export interface AttachmentShapes {
  header: Named<'header'>;
  query: Named<'query'>;
  cookie: Named<'cookie'>;
  /** HTTP Basic (RFC 7617): `Authorization: Basic base64(user:password)`, both templates. */
  basic: { in: 'basic'; user: string; password: string };
}

/** One `token.attach` entry. */
export type Attachment = AttachmentShapes[AttachmentKind];
/** An entry of a kind that carries a named value (what doctor's discovery tries). */
export type NamedAttachment = Extract<Attachment, { name: string }>;

export function isNamedAttachment(a: Attachment): a is NamedAttachment {
  return 'name' in a;
}

type FieldsOf<K extends AttachmentKind> = ReadonlyArray<Exclude<keyof AttachmentShapes[K], 'in'>>;

/**
 * The fields each kind's entry must have besides `in`, templates marked: the config checks
 * require these and refuse the other kinds' fields in it (config/attach-checks.ts).
 */
export const KIND_FIELDS: { readonly [K in AttachmentKind]: { required: FieldsOf<K>; templates: FieldsOf<K> } } = {
  header: { required: ['name', 'value'], templates: ['value'] },
  query: { required: ['name', 'value'], templates: ['value'] },
  cookie: { required: ['name', 'value'], templates: ['value'] },
  basic: { required: ['user', 'password'], templates: ['user', 'password'] },
};

/**
 * Where an entry puts what it carries: a header, a query parameter or a cookie, by name. The
 * proxy strips a client's value of it (proxy/attach.ts) and the config checks refuse two entries
 * that set the same one (config/attach-checks.ts).
 */
export function placeOf(a: Attachment): { in: 'header' | 'query' | 'cookie'; name: string } {
  switch (a.in) {
    case 'header':
    case 'query':
    case 'cookie':
      return { in: a.in, name: a.name };
    case 'basic':
      return { in: 'header', name: 'Authorization' };
    default:
      return unhandledAttachmentKind(a);
  }
}

/** How an entry reads in doctor's report: `Authorization: Bearer {token}`, `?access_token={token}`, `Cookie token={token}`. */
export function describeAttachment(a: Attachment): string {
  switch (a.in) {
    case 'header': return `${a.name}: ${a.value}`;
    case 'query': return `?${a.name}=${a.value}`;
    case 'cookie': return `Cookie ${a.name}=${a.value}`;
    case 'basic': return `Authorization: Basic base64(${a.user}:${a.password})`;
    default: return unhandledAttachmentKind(a);
  }
}

export function isAttachmentKind(value: unknown): value is AttachmentKind {
  return (ATTACHMENT_KINDS as readonly unknown[]).includes(value);
}

/** The `default` of an exhaustive switch over the kinds: unreachable while every kind is handled. */
export function unhandledAttachmentKind(kind: never): never {
  throw new Error(`attachment kind ${JSON.stringify(kind)} is not handled`);
}
