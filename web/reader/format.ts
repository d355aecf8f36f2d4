import type { Texts } from './texts/index.ts';

/** 1536 → "1.5 KB" (units of 1024, as file managers show them). */
export function formatBytes(t: Pick<Texts, 'units'>, bytes: number): string {
  if (bytes < 1024) return t.units.bytes(bytes);
  const units = [t.units.kb, t.units.mb, t.units.gb];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const digits = value < 10 && !Number.isInteger(value) ? 1 : 0;
  return units[unit]!(value.toFixed(digits));
}

/** 900 → "15 minutes"; 2592000 → "30 days"; a whole unit, rounded up for waits. */
export function formatDuration(t: Pick<Texts, 'units'>, seconds: number): string {
  const s = Math.max(0, Math.ceil(seconds));
  if (s < 120) return t.units.seconds(s);
  if (s < 2 * 3600) return t.units.minutes(Math.ceil(s / 60));
  if (s < 2 * 86400) return t.units.hours(Math.ceil(s / 3600));
  return t.units.days(Math.round(s / 86400));
}

/** A date in the page's language (`lang`), with the time. */
export function formatDate(value: string, lang: string): string {
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return value;
  return new Intl.DateTimeFormat(lang, { dateStyle: 'long', timeStyle: 'short' }).format(date);
}
