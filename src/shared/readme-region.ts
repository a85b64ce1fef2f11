/**
 * Generated regions of the README and docs/metrics.md (the configuration and metrics tables): text between two
 * marker comments that a script rewrites and a test compares with what the code says.
 */
export interface ReadmeRegion {
  /** The text currently between the markers, or undefined when they are missing. */
  read(readme: string): string | undefined;
  /** `readme` with the text between the markers replaced by `content`. */
  replace(readme: string, content: string): string;
}

export function readmeRegion(start: string, end: string): ReadmeRegion {
  const bounds = (readme: string) => {
    const from = readme.indexOf(start);
    const to = readme.indexOf(end);
    return from < 0 || to < from ? undefined : { from, to };
  };
  return {
    read(readme) {
      const b = bounds(readme);
      return b && readme.slice(b.from + start.length, b.to).replace(/^\n/, '');
    },
    replace(readme, content) {
      const b = bounds(readme);
      if (!b) throw new Error(`the file has no ${start} ... ${end} region`);
      return `${readme.slice(0, b.from + start.length)}\n${content}${readme.slice(b.to)}`;
    },
  };
}

/** A Markdown table cell: pipes escaped, line breaks folded. */
export function escapeCell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
}

/** A Markdown code span inside a table cell. */
export function codeCell(text: string): string {
  return `\`${escapeCell(text)}\``;
}
