import { type FormEvent, useRef, useState } from 'react';
import { announce } from '../announce';
import { ApiError, api, type CallBill, type PlaygroundModel, postForStream } from '../api';
import { ErrorNotice, LoadError } from '../components/notice';
import { tokens, usd } from '../format';
import { messageOf, useLoad } from '../use-load';

interface ModelList {
  data: PlaygroundModel[];
  streaming: boolean;
}

interface Answer {
  text: string;
  bill: CallBill | undefined;
  /** The stream broke off after it began (its part was billed). */
  cut?: string;
}

interface Chunk extends Partial<CallBill> {
  choices?: { delta?: { content?: string | null } }[];
  error?: { message?: string };
}

/** Reads a `chat.completion.chunk` stream, handing each event to `onEvent` as it arrives. */
async function readEvents(res: Response, onEvent: (chunk: Chunk) => void): Promise<void> {
  const reader = res.body?.getReader();
  if (!reader) return;
  const decoder = new TextDecoder();
  let buffered = '';
  for (;;) {
    const { done, value } = await reader.read();
    buffered += decoder.decode(value, { stream: !done });
    let end = buffered.indexOf('\n\n');
    while (end >= 0) {
      const event = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      for (const line of event.split('\n')) {
        const data = line.startsWith('data:') ? line.slice(5).trim() : '';
        if (data !== '' && data !== '[DONE]') onEvent(JSON.parse(data) as Chunk);
      }
      end = buffered.indexOf('\n\n');
    }
    if (done) return;
  }
}

/**
 * Try a prompt on a provider or model: the answer (streamed when the server streams), its tokens, its cost
 * and the balance after it. A call here is billed to the account like any API call; the usage list shows
 * it under the key "Playground".
 */
export function PlaygroundPage() {
  const models = useLoad(() => api<ModelList>('GET', '/playground/models'), 'models');
  const [provider, setProvider] = useState('auto');
  const [prompt, setPrompt] = useState('');
  const [stream, setStream] = useState(true);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const [answer, setAnswer] = useState<Answer>();
  const abort = useRef<AbortController | undefined>(undefined);

  const streaming = models.data?.streaming === true;
  const active = (models.data?.data ?? []).filter((m) => m.tollgate.active);

  async function send(e: FormEvent) {
    e.preventDefault();
    setError(undefined);
    if (prompt.trim() === '') {
      setError('Type a prompt first.');
      return;
    }
    const body = {
      ...(provider === 'auto' ? {} : { provider }),
      messages: [{ role: 'user', content: prompt }],
      ...(streaming && stream ? { stream: true } : {}),
    };
    setBusy(true);
    setAnswer({ text: '', bill: undefined });
    try {
      if (!(streaming && stream)) {
        const done = await api<CallBill & { choices: { message: { content: string | null } }[] }>(
          'POST',
          '/playground/chat',
          body,
        );
        setAnswer({ text: done.choices[0]?.message.content ?? '', bill: done });
        announce('Answer received.');
        return;
      }
      const controller = new AbortController();
      abort.current = controller;
      const res = await postForStream('/playground/chat', body, controller.signal);
      let text = '';
      let bill: CallBill | undefined;
      let cut: string | undefined;
      await readEvents(res, (chunk) => {
        if (chunk.error) cut = chunk.error.message ?? 'The answer broke off.';
        const delta = chunk.choices?.[0]?.delta?.content;
        if (delta) text += delta;
        if (chunk.usage && chunk.meta) bill = { usage: chunk.usage, meta: chunk.meta };
        setAnswer({ text, bill, ...(cut ? { cut } : {}) });
      });
      announce(cut ? 'The answer broke off.' : 'Answer received.');
    } catch (err) {
      if (err instanceof DOMException && err.name === 'AbortError') return;
      setAnswer(undefined);
      setError(err instanceof ApiError ? err.message : messageOf(err));
    } finally {
      abort.current = undefined;
      setBusy(false);
    }
  }

  return (
    <>
      <p className="lead">
        Try a prompt. Each call is billed to your account like an API call, and shows in Usage under the key
        “Playground”.
      </p>
      <LoadError loaded={models} what="the models" />
      <form className="panel form" onSubmit={send} aria-busy={busy}>
        <label htmlFor="pg-provider">Provider or model</label>
        <select id="pg-provider" value={provider} onChange={(e) => setProvider(e.target.value)}>
          <option value="auto">auto (the gateway picks)</option>
          {active.map((m) => (
            <option key={m.tollgate.provider} value={m.tollgate.provider}>
              {m.tollgate.provider} · {m.id} · in {usd(m.tollgate.pricing.input)} / out{' '}
              {usd(m.tollgate.pricing.output)} per 1M tokens
            </option>
          ))}
        </select>
        <label htmlFor="pg-prompt">Prompt</label>
        <textarea
          id="pg-prompt"
          className="prompt"
          rows={5}
          maxLength={20000}
          value={prompt}
          onChange={(e) => setPrompt(e.target.value)}
        />
        {streaming ? (
          <label className="check">
            <input type="checkbox" checked={stream} onChange={(e) => setStream(e.target.checked)} /> Stream
            the answer
          </label>
        ) : (
          <p className="hint">Streaming is off on this server: the answer shows once it is complete.</p>
        )}
        <ErrorNotice>{error}</ErrorNotice>
        <div className="actions">
          <button type="submit" className="button primary" disabled={busy}>
            {busy ? 'Waiting for the answer…' : 'Send'}
          </button>
          {busy && streaming && stream && (
            <button type="button" className="button secondary" onClick={() => abort.current?.abort()}>
              Stop
            </button>
          )}
        </div>
      </form>
      {answer && (
        <section className="panel" aria-labelledby="pg-answer-heading" aria-busy={busy}>
          <h2 id="pg-answer-heading">Answer</h2>
          <pre className="answer" data-testid="playground-answer">
            {answer.text}
          </pre>
          {answer.cut && <p className="notice error">{answer.cut}</p>}
          {answer.bill && (
            <dl className="facts" data-testid="playground-bill">
              <dt>Provider</dt>
              <dd>{answer.bill.meta.provider}</dd>
              <dt>Tokens</dt>
              <dd>
                {tokens(answer.bill.usage.prompt_tokens)} in · {tokens(answer.bill.usage.completion_tokens)}{' '}
                out
              </dd>
              <dt>Cost</dt>
              <dd className="num">{usd(answer.bill.meta.cost.total)}</dd>
              <dt>Balance</dt>
              <dd className="num">{usd(answer.bill.meta.balance)}</dd>
            </dl>
          )}
        </section>
      )}
    </>
  );
}
