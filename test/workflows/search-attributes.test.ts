import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SEARCH_ATTRIBUTE_KEYS } from '../../workflows/search-attributes.js';

const ENGINES_SCRIPT = fileURLToPath(new URL('../../scripts/engines.sh', import.meta.url));
// The dev server's spelling (`--search-attribute Name=Type`) of the SDK's SearchAttributeType.
const CLI_TYPE = {
  TEXT: 'Text',
  KEYWORD: 'Keyword',
  INT: 'Int',
  DOUBLE: 'Double',
  BOOL: 'Bool',
  DATETIME: 'Datetime',
  KEYWORD_LIST: 'KeywordList',
} as const;

describe('workflow search attributes', () => {
  it('are the ones scripts/engines.sh registers at dev-server start', () => {
    const line = readFileSync(ENGINES_SCRIPT, 'utf8').match(/^SEARCH_ATTRIBUTES=\(([^)]*)\)/m);
    assert.ok(line?.[1], 'engines.sh declares SEARCH_ATTRIBUTES=(…)');
    const registered = line[1].trim().split(/\s+/).sort();
    const declared = SEARCH_ATTRIBUTE_KEYS.map((key) => `${key.name}=${CLI_TYPE[key.type]}`).sort();
    assert.deepEqual(registered, declared);
  });
});
