/**
 * Places named by an answer (docs/protocol.md §2.3 `locations`, read by a dependent `tile_render` step, docs/protocol.md §2.2 rule 2).
 * They come only from the model: when asked for, the model is told to answer as JSON
 * `{ "text", "locations": [{ "name", "address" }] }`, and that answer is parsed leniently. Nothing is ever
 * made up here: an answer that does not parse gives its raw text and no locations.
 */
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';

export interface Location {
  name: string;
  address: string;
}

export interface LocatedAnswer {
  text: string;
  locations: Location[];
}

const MAX_LOCATIONS = 50;
const MAX_FIELD = 300;

export const LOCATIONS_INSTRUCTION =
  'Answer with one JSON object and nothing else: {"text": "<your answer>", "locations": ' +
  '[{"name": "<place name>", "address": "<street address, town or region>"}]}. List in "locations" only ' +
  'real places your answer names, and an empty array when it names none. Leave "address" empty when you ' +
  'do not know it; never guess one.';

/** The messages with the JSON instruction as the first system message. */
export function withLocationsInstruction(messages: ChatCompletionMessageParam[]): ChatCompletionMessageParam[] {
  return [{ role: 'system', content: LOCATIONS_INSTRUCTION }, ...messages];
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The first JSON object in `content`, also inside a ``` fence or after some prose; undefined if none parses. */
function firstJsonObject(content: string): unknown {
  const start = content.indexOf('{');
  const end = content.lastIndexOf('}');
  if (start < 0 || end <= start) return undefined;
  try {
    return JSON.parse(content.slice(start, end + 1)) as unknown;
  } catch {
    return undefined;
  }
}

const field = (value: unknown): string => (typeof value === 'string' ? value.trim().slice(0, MAX_FIELD) : '');

/** Lenient: `{text, locations}` as asked, or `{answer|response, places}`; anything else is plain text. */
export function parseLocatedAnswer(content: string): LocatedAnswer {
  const parsed = firstJsonObject(content);
  if (!isRecord(parsed)) return { text: content, locations: [] };
  const textValue = parsed.text ?? parsed.answer ?? parsed.response;
  const text = typeof textValue === 'string' ? textValue : content;
  const list = parsed.locations ?? parsed.places;
  const locations: Location[] = [];
  const seen = new Set<string>();
  for (const item of Array.isArray(list) ? list : []) {
    const location = isRecord(item)
      ? { name: field(item.name), address: field(item.address) }
      : { name: field(item), address: '' };
    const key = `${location.name}\u0000${location.address}`;
    if (location.name === '' || seen.has(key)) continue;
    seen.add(key);
    locations.push(location);
    if (locations.length === MAX_LOCATIONS) break;
  }
  return { text, locations };
}
