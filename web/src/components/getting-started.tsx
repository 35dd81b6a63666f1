import { CopyButton } from './copy-button';

function Snippet({ label, code }: { label: string; code: string }) {
  return (
    <figure className="snippet">
      <figcaption>
        <span>{label}</span>
        <CopyButton text={code} label={`Copy ${label}`} />
      </figcaption>
      {/* Scrolls sideways on a narrow screen: focusable, so the keyboard can scroll it too. */}
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must take focus (WCAG 2.1.1). */}
      <pre tabIndex={0}>
        <code>{code}</code>
      </pre>
    </figure>
  );
}

/** How to call the API: the base URL, a curl line and an openai SDK snippet, with `apiKey` filled in. */
export function GettingStarted({ baseUrl, apiKey }: { baseUrl: string; apiKey: string | undefined }) {
  const key = apiKey ?? '$TOLLGATE_KEY';
  const curl = [
    `curl ${baseUrl}/chat/completions \\`,
    `  -H "Authorization: Bearer ${key}" \\`,
    '  -H "Content-Type: application/json" \\',
    `  -d '{"model":"auto","messages":[{"role":"user","content":"Hello!"}]}'`,
  ].join('\n');
  const sdkKey = apiKey ? `'${apiKey}'` : 'process.env.TOLLGATE_KEY';
  const node = [
    "import OpenAI from 'openai';",
    '',
    'const client = new OpenAI({',
    `  baseURL: '${baseUrl}',`,
    `  apiKey: ${sdkKey},`,
    '});',
    'const completion = await client.chat.completions.create({',
    "  model: 'auto',",
    "  messages: [{ role: 'user', content: 'Hello!' }],",
    '});',
    'console.log(completion.choices[0].message.content);',
  ].join('\n');
  return (
    <div className="getting-started">
      <div className="base-url">
        <span className="label">Base URL</span>
        <code>{baseUrl}</code>
        <CopyButton text={baseUrl} label="Copy base URL" />
      </div>
      <Snippet label="curl" code={curl} />
      <Snippet label="OpenAI SDK (Node.js)" code={node} />
      {!apiKey && (
        <p className="hint">
          Set <code>TOLLGATE_KEY</code> to one of your keys. Any OpenAI client works with this base URL;{' '}
          <code>model</code> may be <code>auto</code>, a provider name or a model name.
        </p>
      )}
    </div>
  );
}
