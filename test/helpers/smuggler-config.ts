import { readFileSync } from 'node:fs';

/** One mutation of a defparam/smuggler config: its name and the header line ("gadget") it puts in the request. */
export interface SmugglerMutation { name: string; gadget: string }

/**
 * Reads a defparam/smuggler `configs/*.py` mutation list without Python: only the forms those
 * files use — `mutations["name"] = render_template("gadget")`, optionally inside
 * `for i in range(a, b):` with `"%02x" % i` / `"%c" % (i, i)` formatting. Anything else in the
 * file that looks like a mutation but does not parse throws, so a changed file cannot shrink the
 * corpus silently.
 */
export function readSmugglerConfig(path: string): SmugglerMutation[] {
  const out: SmugglerMutation[] = [];
  let loop: number[] | undefined;
  for (const line of readFileSync(path, 'latin1').split('\n')) {
    const range = /^for i in range\(\s*(\w+)\s*,\s*(\w+)\s*\):/.exec(line);
    if (range) {
      const [from, to] = [Number(range[1]), Number(range[2])];
      loop = Array.from({ length: to - from }, (_, k) => from + k);
      continue;
    }
    if (!/^\s/.test(line) && line.trim() !== '') loop = undefined; // a dedent ends the loop body
    if (!line.includes('render_template(') || line.includes('def render_template')) continue;
    const m = /^\s*mutations\["((?:[^"\\]|\\.)*)"\s*(%\s*\(?i(?:\s*,\s*i)*\)?)?\]\s*=\s*render_template\("((?:[^"\\]|\\.)*)"\s*(%\s*\(?i(?:\s*,\s*i)*\)?)?\)\s*$/.exec(line);
    if (!m) throw new Error(`unreadable mutation line in ${path}: ${JSON.stringify(line)}`);
    const [, name, nameFormat, gadget, gadgetFormat] = m;
    const values = /^\s/.test(line) && loop ? loop : [undefined];
    for (const i of values) {
      out.push({
        name: nameFormat && i !== undefined ? format(unescape(name!), i) : unescape(name!),
        gadget: gadgetFormat && i !== undefined ? format(unescape(gadget!), i) : unescape(gadget!),
      });
    }
  }
  return out;
}

function format(template: string, i: number): string {
  return template.replace(/%02x/g, i.toString(16).padStart(2, '0')).replace(/%c/g, String.fromCharCode(i));
}

/** Python string-literal escapes used by the configs. */
function unescape(text: string): string {
  return text.replace(/\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|.)/g, (_, e: string) => {
    if (e[0] === 'x' || e[0] === 'u') return String.fromCharCode(parseInt(e.slice(1), 16));
    return ({ r: '\r', n: '\n', t: '\t', '\\': '\\', '"': '"', "'": "'" } as Record<string, string>)[e] ?? `\\${e}`;
  });
}
