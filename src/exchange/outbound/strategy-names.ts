/**
 * The names rules and envelopes store for the shipped outbound strategies. Written out here, not derived
 * from the strategies, so that the tables (tables.ts) can name them without importing the strategies, which
 * import the tables; registry.ts makes tsc hold its list and these names to each other.
 */
export type OutboundStrategyName = 'seal' | 'smtp';

/** Bounces take no rule: they go back to the sender by this strategy. */
export const BOUNCE_STRATEGY: OutboundStrategyName = 'smtp';
