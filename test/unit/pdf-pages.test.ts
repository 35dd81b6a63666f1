import { describe, expect, it } from 'vitest';
import {
  fileSize,
  PDF_TEXT_TOKENS_PER_PAGE,
  promptSize,
  promptTokenBound,
} from '../../src/billing/estimate.js';
import { isPdf, MAX_PDF_PAGES, pdfPageBound, UNCOUNTED_PDF_PAGES } from '../../src/billing/pdf-pages.js';
import type { ContentPart } from '../../src/providers/types.js';
import { minimalPdf } from '../helpers/pdf.js';
import { providerConfig } from '../providers/provider-test-helpers.js';

function pdfPart(
  bytes: Buffer,
  mediaType: string | undefined = 'application/pdf',
): Extract<ContentPart, { type: 'file' }> {
  return { type: 'file', data: bytes.toString('base64'), mediaType, fileId: undefined, filename: 'doc.pdf' };
}

describe('pdfPageBound: the pages of a PDF from its bytes, in one scan', () => {
  it('counts the page objects of a real 100-page PDF of a few kilobytes', () => {
    const pdf = minimalPdf(100);
    expect(pdf.length).toBeLessThan(8_000);
    expect(pdfPageBound(pdf)).toBe(100);
    expect(pdfPageBound(minimalPdf(1))).toBe(1);
    expect(pdfPageBound(minimalPdf(7))).toBe(7);
  });

  it('does not count the page tree (/Pages) or other names that start with /Page', () => {
    const text =
      '%PDF-1.4\n1 0 obj << /Type /Pages /PageLabels 3 0 R /PageMode /UseNone /Kids [2 0 R] >> endobj\n2 0 obj <</Type/Page>> endobj';
    expect(pdfPageBound(Buffer.from(text, 'latin1'))).toBe(1);
  });

  it('reads names written with #xx escapes, and the largest /Count', () => {
    const escaped = `%PDF-1.4\n${Array.from({ length: 40 }, (_, i) => `${i + 3} 0 obj <</Type /P#61ge>> endobj`).join('\n')}`;
    expect(pdfPageBound(Buffer.from(escaped, 'latin1'))).toBe(40);
    expect(
      pdfPageBound(Buffer.from('%PDF-1.7\n2 0 obj << /Type /Pages /Count 250 >> endobj', 'latin1')),
    ).toBe(250);
  });

  it('a PDF with object streams (pages hidden in compressed objects) counts at least the documented ceiling', () => {
    const text =
      '%PDF-1.5\n5 0 obj << /Type /ObjStm /N 120 /First 900 /Filter /FlateDecode /Length 10 >>\nstream\nxxxxxxxxxx\nendstream endobj';
    expect(pdfPageBound(Buffer.from(text, 'latin1'))).toBe(UNCOUNTED_PDF_PAGES);
    expect(pdfPageBound(Buffer.from(text.replace('/ObjStm', '/Obj#53tm'), 'latin1'))).toBe(
      UNCOUNTED_PDF_PAGES,
    );
    // Counted pages beyond the ceiling still count.
    expect(pdfPageBound(Buffer.concat([minimalPdf(300), Buffer.from(text, 'latin1')]))).toBe(300);
  });

  it('is at least 1 and at most the largest limit any upstream documents', () => {
    expect(pdfPageBound(Buffer.from('%PDF-1.4 nothing here', 'latin1'))).toBe(1);
    expect(pdfPageBound(Buffer.from('%PDF-1.4 << /Count 999999999 >>', 'latin1'))).toBe(MAX_PDF_PAGES);
  });

  it('a file is a PDF by its media type or by its header', () => {
    expect(isPdf('application/pdf', Buffer.from('anything'))).toBe(true);
    expect(isPdf('text/plain', minimalPdf(1))).toBe(true);
    expect(isPdf('text/plain', Buffer.from('plain text'))).toBe(false);
  });
});

describe('the hold bounds a PDF by its pages', () => {
  const claude = providerConfig('prov-claude', 'anthropic', 'http://127.0.0.1:1', 'claude');

  it('a 100-page PDF counts its bytes, the text and an image of every page', () => {
    const pdf = minimalPdf(100);
    expect(fileSize(pdfPart(pdf))).toEqual({
      tokens: pdf.length + 100 * PDF_TEXT_TOKENS_PER_PAGE,
      images: 100,
    });
    // Labelled as something else, its header still makes it a PDF.
    expect(fileSize(pdfPart(pdf, 'application/octet-stream')).images).toBe(100);
    const size = promptSize({
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Sum up' }, pdfPart(pdf)] }],
    });
    // What Claude bills such a PDF (1,500+ tokens a page) is well within the bound.
    expect(promptTokenBound(size, claude)).toBeGreaterThan(150_010);
  });

  it('a file sent by id counts as a PDF of the documented ceiling; any other file as its bytes and one image', () => {
    const byId: ContentPart = {
      type: 'file',
      data: undefined,
      mediaType: undefined,
      fileId: 'file-1',
      filename: undefined,
    };
    expect(fileSize(byId)).toEqual({
      tokens: UNCOUNTED_PDF_PAGES * PDF_TEXT_TOKENS_PER_PAGE,
      images: UNCOUNTED_PDF_PAGES,
    });
    const text = Buffer.from('hello world');
    expect(fileSize(pdfPart(text, 'text/plain'))).toEqual({ tokens: text.length, images: 1 });
  });
});
