/** `base` without its trailing slashes, followed by `path` (which starts with `/`). */
export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}${path}`;
}
