import type { ModelAlias } from '../config/index.js';
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
    /** On an alias's entry (`MODEL_ALIASES`; `id` is its name or `prefix*` pattern): the model it serves. */
    alias_of?: string;
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

/** The entry of a name an alias maps (`id`: the name, or the alias's `prefix*` pattern) to `status`'s model. */
export function aliasBody(id: string, status: ProviderStatus): ModelBody {
  const body = modelBody(status);
  return { ...body, id, tollgate: { ...body.tollgate, alias_of: body.id } };
}

/**
 * OpenAI's list envelope (`openai.models.list()`): one entry per provider, then one per alias
 * (`MODEL_ALIASES`); `streaming` says whether `stream: true` is served here (STREAMING=on).
 */
export function modelListBody(
  statuses: readonly ProviderStatus[],
  aliases: readonly ModelAlias[],
  streaming: boolean,
): { object: 'list'; data: ModelBody[]; streaming: boolean } {
  const data = statuses.map(modelBody);
  for (const alias of aliases) {
    const status = statuses.find((s) => s.provider.name === alias.provider);
    if (status !== undefined) data.push(aliasBody(alias.pattern, status));
  }
  return { object: 'list', data, streaming };
}
