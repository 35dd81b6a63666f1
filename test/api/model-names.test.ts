import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/harness.js';

/**
 * Model names on the three doors: an unknown one is refused saying that this gateway does not serve it
 * (a coding agent shows that text to its user), with no upstream call; a name MODEL_ALIASES maps is
 * served by its provider on the Messages and Responses doors.
 */

let h: Harness;

beforeAll(async () => {
  h = await startHarness({ env: { MODEL_ALIASES: 'claude-*=prov-claude,gpt-5-codex=prov-qwen' } });
});

afterAll(async () => {
  await h?.close();
});

async function post(path: string, body: unknown) {
  const res = await h.server.app.inject({
    method: 'POST',
    url: `/api/v1${path}`,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${h.key}` },
    payload: JSON.stringify(body),
  });
  return { status: res.statusCode, json: JSON.parse(res.body) as Record<string, unknown>, text: res.body };
}

const NOT_SERVED = 'This Tollgate gateway does not serve the model "gpt-9-ultra"';

describe('model names on the three doors', () => {
  it('refuses an unknown model saying the gateway does not serve it, with no upstream call', async () => {
    const calls = () => h.sim.requests('qwen').length + h.sim.requests('claude').length;
    const before = calls();
    const chat = await post('/chat/completions', {
      model: 'gpt-9-ultra',
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(chat.status).toBe(404);
    expect(chat.json.error).toMatchObject({
      code: 'model_not_found',
      message: expect.stringContaining(NOT_SERVED),
    });

    const messages = await post('/messages', {
      model: 'gpt-9-ultra',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(messages.status).toBe(404);
    expect(messages.json).toMatchObject({
      type: 'error',
      error: { type: 'not_found_error', message: expect.stringContaining(NOT_SERVED) },
    });

    const responses = await post('/responses', { model: 'gpt-9-ultra', input: 'Hi' });
    expect(responses.status).toBe(404);
    expect(responses.json.error).toMatchObject({
      code: 'model_not_found',
      message: expect.stringContaining(NOT_SERVED),
    });
    expect(calls()).toBe(before);
  });

  it('serves an aliased name through its provider on the Responses and Messages doors', async () => {
    const codex = await post('/responses', { model: 'gpt-5-codex', input: 'Hi' });
    expect(codex.status, codex.text).toBe(200);
    expect(String((codex.json.output as { content: { text: string }[] }[])[0]?.content[0]?.text)).toContain(
      'Simulated reply from qwen',
    );
    const claude = await post('/messages', {
      model: 'claude-opus-4-1',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(claude.status, claude.text).toBe(200);
    expect(JSON.stringify(claude.json.content)).toContain('Simulated reply from claude');
  });
});
