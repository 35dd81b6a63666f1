import { nanoToUsd } from '../money/money.js';
import type { ProviderStatus } from '../routing/registry.js';

/** One entry of `GET /api/v1/models`: OpenAI's model object plus Tollgate's `tollgate` extension. */
export interface ModelBody {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
  tollgate: {
    provider: string;
    /** USD per 1M tokens. */
    pricing: { input: number; output: number };
    /** In the `auto` rotation list. */
    auto: boolean;
    /** Serving now: configured, enabled and its circuit not open. */
    active: boolean;
  };
}

/** The time the catalog entries are reported as created (OpenAI's `created` is required). */
const CATALOG_CREATED = 1_767_225_600; // 2026-01-01T00:00:00Z

export function modelBody(status: ProviderStatus): ModelBody {
  const p = status.provider;
  return {
    id: p.model,
    object: 'model',
    created: CATALOG_CREATED,
    owned_by: p.name,
    tollgate: {
      provider: p.name,
      pricing: { input: nanoToUsd(p.inputPriceNano), output: nanoToUsd(p.outputPriceNano) },
      auto: p.inAutoRotation,
      active: status.active,
    },
  };
}

/** OpenAI's list envelope (`openai.models.list()`). */
/** The model list; `streaming` says whether `stream: true` is served here (STREAMING=on). */
export function modelListBody(
  statuses: readonly ProviderStatus[],
  streaming: boolean,
): { object: 'list'; data: ModelBody[]; streaming: boolean } {
  return { object: 'list', data: statuses.map(modelBody), streaming };
}
