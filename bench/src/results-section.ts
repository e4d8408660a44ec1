/**
 * A section of bench/results.md that another script than `pnpm bench` writes (load-time.ts
 * writes "Load time and weight"): replaced in place by its script, carried over as it was when
 * `pnpm bench` rewrites the rest of the file.
 */
export const LOAD_TIME_HEADING = '## Load time and weight';

/** The section under `heading` in `markdown` (to the next `## ` heading or the end), or ''. */
export function sectionOf(markdown: string, heading: string): string {
  const start = markdown.indexOf(`\n${heading}\n`);
  if (start < 0) return '';
  const next = markdown.indexOf('\n## ', start + heading.length + 2);
  return markdown.slice(start + 1, next < 0 ? markdown.length : next + 1).trimEnd();
}

/** `markdown` with the section under `section`'s first line replaced by it, or appended. */
export function withSection(markdown: string, section: string): string {
  const heading = section.slice(0, section.indexOf('\n'));
  const old = sectionOf(markdown, heading);
  if (!old) return `${markdown.trimEnd()}\n\n${section.trimEnd()}\n`;
  return markdown.replace(old, () => section.trimEnd());
}
