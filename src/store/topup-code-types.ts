/** The store's top-up code interfaces (a part of `Store`, declared in types.ts). */

/** A batch of top-up codes, with how many of its codes were redeemed. */
export interface CodeBatch {
  id: string;
  /** What each code of the batch credits. */
  amountNano: number;
  /** How many codes the batch was created with. */
  codes: number;
  note: string | null;
  /** When its unredeemed codes stop working; null: never. */
  expiresAt: number | null;
  /** The admin account that created it; null when made with the CLI. */
  createdBy: string | null;
  createdAt: number;
  redeemed: number;
}

/** One code of a batch, without the code itself: its place, its hint, and who redeemed it when. */
export interface TopUpCodeState {
  position: number;
  hint: string;
  redeemedBy: { accountId: string; email: string } | null;
  redeemedAt: number | null;
}

export interface NewCodeBatch {
  amountNano: number;
  note: string | null;
  expiresAt: number | null;
  createdBy: string | null;
  /** The codes as stored: each one's SHA-256 and display hint. */
  codes: readonly { hash: string; hint: string }[];
}

export type RedeemCodeResult =
  | { ok: true; amountNano: number; balanceNano: number; batchId: string }
  /** No such code, or it was redeemed already, or it expired: nothing was changed. */
  | { ok: false };

/** Top-up codes (docs/api.md "Top-up codes"): batches an admin creates, each code credited once. */
export interface TopUpCodes {
  createCodeBatch(input: NewCodeBatch): Promise<CodeBatch>;
  /** Batches, newest first. */
  listCodeBatches(limit: number): Promise<CodeBatch[]>;
  getCodeBatch(id: string): Promise<CodeBatch | undefined>;
  /** A batch's codes in order: who redeemed each and when (never the codes). */
  listBatchCodes(batchId: string): Promise<TopUpCodeState[]>;
  /**
   * One transaction: marks the code of this hash redeemed by the account — only while it is unredeemed and
   * unexpired, so of any number of concurrent redemptions on any instance exactly one succeeds — and
   * credits its batch's amount to the account, as a ledger credit that names the batch.
   */
  redeemCode(input: { codeHash: string; accountId: string }): Promise<RedeemCodeResult>;
}
