import assert from 'node:assert/strict';
import { parseLocatedAnswer, withLocationsInstruction } from '../../../activities/inference/locations.js';

describe('locations from a model answer (never invented)', () => {
  it('reads {text, locations} as asked, also inside a code fence or after prose', () => {
    const json = '{"text":"Two parks.","locations":[{"name":"Villa Borghese","address":"Rome"},{"name":"Pincio"}]}';
    for (const content of [json, '```json\n' + json + '\n```', `Sure! ${json}`]) {
      assert.deepEqual(parseLocatedAnswer(content), {
        text: 'Two parks.',
        locations: [
          { name: 'Villa Borghese', address: 'Rome' },
          { name: 'Pincio', address: '' },
        ],
      });
    }
  });

  it('accepts the near misses small models produce: answer/places, plain strings', () => {
    assert.deepEqual(parseLocatedAnswer('{"answer":"See it.","places":["Colosseum"]}'), {
      text: 'See it.',
      locations: [{ name: 'Colosseum', address: '' }],
    });
  });

  it('drops nameless and duplicate places, caps the list', () => {
    const many = Array.from({ length: 80 }, (_, i) => ({ name: `p${i}`, address: 'a' }));
    const parsed = parseLocatedAnswer(
      JSON.stringify({
        text: 't',
        locations: [{ name: '' }, { name: 'x', address: 'y' }, { name: 'x', address: 'y' }, 7, ...many],
      }),
    );
    assert.equal(parsed.locations[0]?.name, 'x');
    assert.equal(parsed.locations.filter((l) => l.name === 'x').length, 1);
    assert.equal(parsed.locations.length, 50);
  });

  it('gives the raw text and no locations when the answer is not JSON', () => {
    assert.deepEqual(parseLocatedAnswer('Try the Pincio {maybe'), { text: 'Try the Pincio {maybe', locations: [] });
    assert.deepEqual(parseLocatedAnswer('["Rome"]'), { text: '["Rome"]', locations: [] });
  });

  it('puts the instruction first, as a system message', () => {
    const messages = withLocationsInstruction([{ role: 'user', content: 'q' }]);
    assert.equal(messages[0]?.role, 'system');
    assert.match(String(messages[0]?.content), /never guess/);
    assert.equal(messages.length, 2);
  });
});
