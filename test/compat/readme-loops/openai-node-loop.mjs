// The streaming loop of the openai Node SDK's README, written without optional chaining as much code in
// the wild is (`chunk.choices[0].delta.content`): a chunk with `choices: []` throws a TypeError here.
// Run by test/compat/readme-loops.test.ts with TOLLGATE_BASE_URL, TOLLGATE_KEY and TOLLGATE_MODEL set.
import OpenAI from 'openai';

const client = new OpenAI({
  apiKey: process.env.TOLLGATE_KEY,
  baseURL: process.env.TOLLGATE_BASE_URL,
  maxRetries: 0,
});

try {
  const stream = await client.chat.completions.create({
    model: process.env.TOLLGATE_MODEL,
    messages: [{ role: 'user', content: process.env.TOLLGATE_PROMPT }],
    stream: true,
  });
  for await (const chunk of stream) {
    process.stdout.write(chunk.choices[0].delta.content || '');
  }
} catch (err) {
  process.stderr.write(`${err?.constructor?.name}: ${err?.message}\n`);
  process.exitCode = 1;
}
