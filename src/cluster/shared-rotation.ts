import { LocalRotationCounter, type RotationCounter } from '../routing/rotation.js';
import type { RedisLink } from './redis-link.js';

/**
 * The auto-rotation sequence shared by every instance: one Redis INCR per auto-routed request
 * (https://redis.io/docs/latest/commands/incr/), so requests spread over the instances still take the
 * providers in turn. When Redis does not answer, this instance's own counter carries on (each instance
 * then rotates by itself, which is still even overall).
 */
export class SharedRotationCounter implements RotationCounter {
  private readonly local = new LocalRotationCounter();

  constructor(
    private readonly link: RedisLink,
    private readonly key: string,
  ) {}

  async next(): Promise<number> {
    const value = await this.link.run((redis) => redis.incr(this.key));
    if (value === undefined || !Number.isSafeInteger(value) || value < 1) return this.local.next();
    return value - 1;
  }
}
