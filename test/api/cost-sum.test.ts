import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postChat, startListening } from '../compat/compat-helpers.js';
import type { Harness } from '../helpers/harness.js';

/**
 * `usage.cost` is the amount charged as its own exact decimal: summed over many calls (plain and
 * streamed, on every provider's prices, with prompts of many lengths so that the costs whose
 * `input + output` as floats carries noise occur), it equals the balance's fall to the nanodollar.
 * The sum is taken over the decimal text of each body, parsed exactly — never as floats.
 */

let h: Harness;
let baseURL: string;

beforeAll(async () => {
  ({ h, baseURL } = await startListening({ env: { STREAMING: 'on' } }));
});
afterAll(async () => {
  await h.close();
});

const PROVIDERS = [
  'prov-deepseek',
  'prov-qwen',
  'prov-kimi',
  'prov-gpt-oss-120b',
  'prov-gemini',
  'prov-llama',
  'prov-mistral',
  'prov-claude',
];

/**
 * A JSON number's text ("0.0001354", "1e-7", "12") as whole nanodollars, exactly (BigInt arithmetic);
 * `undefined` when it is not a whole number of nanodollars (float noise such as 0.00013539999999999998).
 */
function exactNano(text: string): bigint | undefined {
  const match = /^(\d+)(?:\.(\d+))?(?:[eE]([-+]?\d+))?$/.exec(text);
  if (!match) return undefined;
  const digits = `${match[1]}${match[2] ?? ''}`;
  // value = digits × 10^(exponent − fraction digits); nanodollars = that × 10^9.
  const shift = Number(match[3] ?? 0) - (match[2]?.length ?? 0) + 9;
  if (shift >= 0) return BigInt(digits) * 10n ** BigInt(shift);
  const divisor = 10n ** BigInt(-shift);
  const value = BigInt(digits);
  return value % divisor === 0n ? value / divisor : undefined;
}

/** The text of the number after `"cost":` inside the `"usage"` object of a body or chunk. */
function usageCostText(json: string): string {
  const usage = json.slice(json.indexOf('"usage":{'));
  const match = /"cost":([^,}]+)/.exec(usage);
  if (!match?.[1]) throw new Error(`no usage.cost in ${json.slice(0, 300)}`);
  return match[1];
}

describe('usage.cost summed over many calls', () => {
  it('equals the balance’s fall exactly, while meta.cost.total carries float noise on some', async () => {
    const { accountId, key } = await h.newAccount('10');
    const before = BigInt(await h.balanceNano(accountId));
    let sum = 0n;
    let noisyTotals = 0;
    const calls = 200;
    for (let i = 0; i < calls; i++) {
      const provider = PROVIDERS[i % PROVIDERS.length] as string;
      const words = Array.from({ length: 1 + ((i * 7) % 23) }, (_, w) => `word${(i * 13 + w) % 97}`);
      const body = { model: provider, messages: [{ role: 'user', content: words.join(' ') }] };
      // One call in four is streamed: its bill chunk's `usage.cost` follows the same rule.
      const streamed = i % 4 === 3;
      const answer = await postChat(baseURL, key, streamed ? { ...body, stream: true } : body);
      expect(answer.status, answer.text.slice(0, 300)).toBe(200);
      const billText = streamed ? (answer.events.find((e) => e.includes('"meta":')) as string) : answer.text;
      const costText = usageCostText(billText);
      const nano = exactNano(costText);
      expect(nano, `usage.cost ${costText} of call ${i}`).not.toBeUndefined();
      sum += nano as bigint;
      // meta.cost keeps its rule: total = input + output as JavaScript numbers.
      const { meta, usage } = JSON.parse(billText) as {
        meta: { cost: { input: number; output: number; total: number } };
        usage: { cost: number };
      };
      expect(meta.cost.total).toBe(meta.cost.input + meta.cost.output);
      if (meta.cost.total !== usage.cost) noisyTotals++;
    }
    const fell = before - BigInt(await h.balanceNano(accountId));
    console.log(
      `${calls} calls: Σ usage.cost = ${sum} n$, balance fell ${fell} n$; meta.cost.total differed from usage.cost on ${noisyTotals}`,
    );
    expect(sum).toBe(fell);
    // The float-noise cases did occur (else this test would prove nothing about them).
    expect(noisyTotals).toBeGreaterThan(0);
    expect(await h.server.store.openHoldsNano(accountId)).toBe(0);
    expect((await h.server.store.ledgerCheck()).ok).toBe(true);
  }, 120_000);
});

describe('exactNano (the test’s own parser)', () => {
  it('reads decimals and exponents exactly, and refuses float noise', () => {
    expect(exactNano('0.0001354')).toBe(135_400n);
    expect(exactNano('1e-7')).toBe(100n);
    expect(exactNano('2.5e-8')).toBe(25n);
    expect(exactNano('12')).toBe(12_000_000_000n);
    expect(exactNano('0.00013539999999999998')).toBeUndefined();
    expect(exactNano('0.0008190000000000001')).toBeUndefined();
  });
});
