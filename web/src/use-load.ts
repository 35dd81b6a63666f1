import { useCallback, useEffect, useState } from 'react';
import { ApiError } from './api';

export interface Loaded<T> {
  data: T | undefined;
  error: string | undefined;
  loading: boolean;
  reload: () => void;
}

/** Runs `load` when `key` changes (and on `reload`), keeping the last data while a reload runs. */
export function useLoad<T>(load: () => Promise<T>, key: string): Loaded<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<string>();
  const [loading, setLoading] = useState(true);
  const [generation, setGeneration] = useState(0);
  // biome-ignore lint/correctness/useExhaustiveDependencies: `key` names everything `load` depends on.
  useEffect(() => {
    let live = true;
    setLoading(true);
    load().then(
      (value) => {
        if (!live) return;
        setData(value);
        setError(undefined);
        setLoading(false);
      },
      (err: unknown) => {
        if (!live) return;
        setError(err instanceof ApiError ? err.message : 'Something went wrong. Reload the page.');
        setLoading(false);
      },
    );
    return () => {
      live = false;
    };
  }, [key, generation]);
  const reload = useCallback(() => setGeneration((g) => g + 1), []);
  return { data, error, loading, reload };
}

/** The message of an error from a call, for a form's error line. */
export function messageOf(err: unknown): string {
  return err instanceof ApiError ? err.message : 'Something went wrong. Try again.';
}
