import { useSyncExternalStore } from 'react';

/**
 * Light or dark: the choice remembered in this browser, else the system's (`prefers-color-scheme`), followed
 * live while nothing is remembered. Applied as `data-theme` on <html>, which styles.css keys its colors on.
 */
export type Theme = 'light' | 'dark';

const KEY = 'tollgate.theme';
const listeners = new Set<() => void>();

function remembered(): Theme | undefined {
  try {
    const v = window.localStorage.getItem(KEY);
    return v === 'light' || v === 'dark' ? v : undefined;
  } catch {
    return undefined;
  }
}

function systemDark(): MediaQueryList {
  return window.matchMedia('(prefers-color-scheme: dark)');
}

function current(): Theme {
  return remembered() ?? (systemDark().matches ? 'dark' : 'light');
}

function apply(): void {
  document.documentElement.dataset.theme = current();
  for (const l of listeners) l();
}

/** Sets the theme before the first render, and follows the system's while no choice is remembered. */
export function initTheme(): void {
  apply();
  systemDark().addEventListener('change', apply);
  window.addEventListener('storage', (e) => {
    if (e.key === KEY) apply();
  });
}

export function setTheme(theme: Theme): void {
  try {
    window.localStorage.setItem(KEY, theme);
  } catch {
    // Storage disabled: the choice holds for this page only.
  }
  document.documentElement.dataset.theme = theme;
  for (const l of listeners) l();
}

export function useTheme(): Theme {
  return useSyncExternalStore(
    (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    () => (document.documentElement.dataset.theme === 'dark' ? 'dark' : 'light'),
  );
}
