/**
 * Screen-reader announcements through one polite live region (`#announcer`, rendered by the app in
 * every state): page changes, keys created and revoked, credit granted. The text is replaced on the
 * next frame so that the same sentence twice is announced twice.
 */
export function announce(text: string): void {
  const region = document.getElementById('announcer');
  if (!region) return;
  region.textContent = '';
  window.requestAnimationFrame(() => {
    region.textContent = text;
  });
}

/** Moves the focus to `el` (made focusable by script only), e.g. a heading after what had it went away. */
export function focusOn(el: HTMLElement | null | undefined): void {
  if (!el) return;
  if (!el.hasAttribute('tabindex')) el.setAttribute('tabindex', '-1');
  el.focus();
}
