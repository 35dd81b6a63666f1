import { describe, expect, it } from 'vitest';
import { redactUrl } from '../../src/http/redact-url.js';

describe('redactUrl: no secret of a query string reaches the log', () => {
  it.each([
    ['/signup?invite=abc123', '/signup?invite=[redacted]'],
    ['/x?api_key=sk-svc-0123&y=1', '/x?api_key=[redacted]&y=1'],
    ['/x?key=short', '/x?key=[redacted]'],
    ['/x?token=t&page=2', '/x?token=[redacted]&page=2'],
    ['/x?q=sk-svc-0123456789abcdef0123456789abcdef', '/x?q=[redacted]'],
    ['/x?note=aGVsbG8gd29ybGQgaGVsbG8gd29ybGQ%3D', '/x?note=[redacted]'],
    ['/x?Invite%5Fcode=abc', '/x?Invite%5Fcode=[redacted]'],
  ])('%s → %s', (url, expected) => {
    expect(redactUrl(url)).toBe(expected);
  });

  it('leaves URLs without secrets as they are', () => {
    for (const url of [
      '/api/v1/models',
      '/usage?limit=50&before=1700000000000',
      '/x?flag',
      '/x?bad=%E0%A4%A',
    ])
      expect(redactUrl(url)).toBe(url);
  });
});
