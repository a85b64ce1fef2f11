/**
 * The ways a credential can be attached to a proxied request (`token.attach[].in`). The one list
 * every part builds on: the config schema's union, the proxy's `compileAttachments` and the
 * config checks all switch over it with an exhaustive `never` default, so adding a kind here is a
 * compile error at each place that must learn to handle it (docs/architecture.md, "An
 * attachment kind").
 */
export const ATTACHMENT_KINDS = ['header', 'query', 'cookie'] as const;
export type AttachmentKind = (typeof ATTACHMENT_KINDS)[number];

/** One `token.attach` entry: `value` is a template with {token}, {apiKey} and {rkObjectId}. */
export type Attachment = { [K in AttachmentKind]: { in: K; name: string; value: string } }[AttachmentKind];

export function isAttachmentKind(value: unknown): value is AttachmentKind {
  return (ATTACHMENT_KINDS as readonly unknown[]).includes(value);
}

/** The `default` of an exhaustive switch over the kinds: unreachable while every kind is handled. */
export function unhandledAttachmentKind(kind: never): never {
  throw new Error(`attachment kind ${JSON.stringify(kind)} is not handled`);
}
