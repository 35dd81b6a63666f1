/**
 * Pages the hold counts for a PDF whose page objects cannot all be seen in its bytes: compressed in object
 * streams (PDF 1.5 and later), where only a parser that inflates them could count them. A hundred pages is
 * the most Anthropic and OpenAI read of one request; Gemini reads up to `MAX_PDF_PAGES`, whose pages it
 * bills at a fraction of the per-page bound (docs/api.md, "Billing").
 */
export const UNCOUNTED_PDF_PAGES = 100;

/** The most pages the hold counts for one PDF: Gemini's limit, the largest any upstream documents. */
export const MAX_PDF_PAGES = 1_000;

/** The bytes a PDF header may start within: readers look for `%PDF-` in the first kilobyte. */
const HEADER_WINDOW = 1024;

/** A PDF name and what follows it up to a delimiter (whitespace or one of `()<>[]{}/%`). */
const NAME_CHAR = '[^\\s()<>\\[\\]{}/%]';
/** `/Page` as a whole name (not `/Pages`, `/PageLabels`, …): the type of every page object. */
const PAGE_NAME = new RegExp(`/Page(?!${NAME_CHAR})`, 'g');
/** A name written with `#xx` escapes, which a reader decodes (`/P#61ge` is `/Page`). */
const ESCAPED_NAME = new RegExp(`/(${NAME_CHAR}*#[0-9A-Fa-f]{2}${NAME_CHAR}*)`, 'g');
/** `/ObjStm`, the type of an object stream: compressed objects, page objects among them perhaps. */
const OBJECT_STREAM = new RegExp(`/ObjStm(?!${NAME_CHAR})`);
/** A page tree node's `/Count` (also an outline's, which only counts more). */
const COUNT = /\/Count\s+\+?(\d{1,9})/g;

/** Whether `bytes` (a file's decoded content) is a PDF, by its media type or by its header. */
export function isPdf(mediaType: string | undefined, bytes: Buffer): boolean {
  if (mediaType?.toLowerCase() === 'application/pdf') return true;
  return bytes.subarray(0, HEADER_WINDOW).includes('%PDF-');
}

/**
 * An upper bound of the pages a PDF has, read from its bytes in O(bytes) without parsing it: the most of
 * the `/Page` objects written in it (names decoded from `#xx` escapes too) and the largest `/Count` of
 * its page tree. Page objects compressed in object streams cannot be seen: a PDF that has any counts at
 * least `UNCOUNTED_PDF_PAGES`. At least 1, at most `MAX_PDF_PAGES`.
 */
export function pdfPageBound(bytes: Buffer): number {
  const text = bytes.toString('latin1');
  let pages = 0;
  for (const _ of text.matchAll(PAGE_NAME)) pages += 1;
  let compressed = OBJECT_STREAM.test(text);
  if (text.includes('#')) {
    for (const match of text.matchAll(ESCAPED_NAME)) {
      const name = decodeName(match[1] ?? '');
      if (name === 'Page') pages += 1;
      else if (name === 'ObjStm') compressed = true;
    }
  }
  for (const match of text.matchAll(COUNT)) pages = Math.max(pages, Number(match[1]));
  if (compressed) pages = Math.max(pages, UNCOUNTED_PDF_PAGES);
  return Math.min(Math.max(pages, 1), MAX_PDF_PAGES);
}

function decodeName(name: string): string {
  return name.replace(/#([0-9A-Fa-f]{2})/g, (_, hex: string) =>
    String.fromCharCode(Number.parseInt(hex, 16)),
  );
}
