// Date ranges of the explorer and the home page: presets in the browser's time zone, as
// half-open [start, end) intervals (the API's start_time inclusive, end_time exclusive), and
// the comparison periods.
export type Preset = 'today' | 'yesterday' | 'last7' | 'last30' | 'last90' | 'thisMonth' | 'lastMonth' | 'thisQuarter';
export const presets: Preset[] = ['today', 'yesterday', 'last7', 'last30', 'last90', 'thisMonth', 'lastMonth', 'thisQuarter'];

export interface Range {
  start: Date;
  end: Date;
}

const day = (d: Date) => new Date(d.getFullYear(), d.getMonth(), d.getDate());
const addDays = (d: Date, n: number) => new Date(d.getFullYear(), d.getMonth(), d.getDate() + n);

export function presetRange(p: Preset, now = new Date()): Range {
  const today = day(now);
  const tomorrow = addDays(today, 1);
  switch (p) {
    case 'today':
      return { start: today, end: tomorrow };
    case 'yesterday':
      return { start: addDays(today, -1), end: today };
    case 'last7':
      return { start: addDays(today, -6), end: tomorrow };
    case 'last30':
      return { start: addDays(today, -29), end: tomorrow };
    case 'last90':
      return { start: addDays(today, -89), end: tomorrow };
    case 'thisMonth':
      return { start: new Date(today.getFullYear(), today.getMonth(), 1), end: tomorrow };
    case 'lastMonth':
      return { start: new Date(today.getFullYear(), today.getMonth() - 1, 1), end: new Date(today.getFullYear(), today.getMonth(), 1) };
    case 'thisQuarter':
      return { start: new Date(today.getFullYear(), today.getMonth() - (today.getMonth() % 3), 1), end: tomorrow };
  }
}

export type Compare = 'none' | 'previous' | 'yoy';

/** compareRange is the period a range is compared with: the one just before, of the same length, or the same dates a year earlier. */
export function compareRange(r: Range, c: Compare): Range | null {
  if (c === 'none') return null;
  if (c === 'yoy') {
    const y = (d: Date) => new Date(d.getFullYear() - 1, d.getMonth(), d.getDate(), d.getHours(), d.getMinutes());
    return { start: y(r.start), end: y(r.end) };
  }
  const len = r.end.getTime() - r.start.getTime();
  return { start: new Date(r.start.getTime() - len), end: new Date(r.start) };
}

export const iso = (d: Date) => d.toISOString();

/** change is the relative change from previous to current, or null when it has no meaning. */
export function change(current: number, previous: number): number | null {
  if (!Number.isFinite(current) || !Number.isFinite(previous) || previous === 0) return null;
  return (current - previous) / Math.abs(previous);
}
