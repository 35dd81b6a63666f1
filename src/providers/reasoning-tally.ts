import type { ReasoningOutput } from './types.js';

/**
 * Gathers the reasoning of an answer as it is read: text pieces by the block or choice they belong to
 * (`key`), and the size of opaque pieces (signatures, redacted or encrypted thinking), whatever else of
 * them is unreadable. Pieces that are not non-empty strings are passed by.
 */
export class ReasoningTally {
  private readonly texts = new Map<number, string>();
  private opaqueChars = 0;

  text(key: number, piece: unknown): void {
    if (typeof piece !== 'string' || piece === '') return;
    this.texts.set(key, (this.texts.get(key) ?? '') + piece);
  }

  opaque(piece: unknown): void {
    if (typeof piece === 'string') this.opaqueChars += piece.length;
  }

  /** What was gathered, or undefined for nothing. */
  output(): ReasoningOutput | undefined {
    if (this.texts.size === 0 && this.opaqueChars === 0) return undefined;
    return { texts: [...this.texts.values()], opaqueChars: this.opaqueChars };
  }
}
