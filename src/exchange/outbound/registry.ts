import { sealStrategy } from './seal.ts';
import { smtpStrategy } from './smtp.ts';
import type { OutboundStrategyName } from './strategy-names.ts';
import type { OutboundContext, OutboundStrategy, OutboundStrategyDefinition } from './types.ts';

/**
 * Every outbound strategy Sealpost ships, and the only list of them: the rule schema's allowed values
 * and `maxItems` and the OpenAPI text come from it. A new strategy is a file in this folder and a line
 * here (docs/decisions.md "Extending Sealpost: a new outbound strategy"), and its name in
 * strategy-names.ts: keyed by those names, the list fails to compile with one missing, extra or misnamed.
 */
const SHIPPED: { readonly [Name in OutboundStrategyName]: OutboundStrategyDefinition<Name> } = {
  seal: sealStrategy,
  smtp: smtpStrategy,
};

export const OUTBOUND_STRATEGIES = Object.values(SHIPPED);

/** The strategies an exchange runs with: the shipped ones, unless the service was given others (tests). */
export type OutboundRegistry = readonly OutboundStrategyDefinition[];

export const strategyNames = (registry: OutboundRegistry): string[] => registry.map((definition) => definition.name);

/** A registry the exchange can run with; checked when the service is defined, before anything starts. */
export function checkOutboundRegistry(registry: OutboundRegistry): OutboundRegistry {
  if (registry.length === 0) throw new Error('An exchange needs at least one outbound strategy');
  const names = strategyNames(registry);
  // Two with one name would leave it to the list's order which one a rule gets.
  const twice = names.find((name, i) => names.indexOf(name) !== i);
  if (twice !== undefined) throw new Error(`Two outbound strategies are named ${twice}`);
  return registry;
}

/** The registry's strategies built for one engine instance, by name. */
export function createOutboundStrategies(
  registry: OutboundRegistry,
  context: OutboundContext,
): ReadonlyMap<string, OutboundStrategy> {
  return new Map(registry.map((definition) => [definition.name, definition.create(context)]));
}
