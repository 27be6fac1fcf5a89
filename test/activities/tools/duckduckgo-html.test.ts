import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseDuckDuckGoHtml, unwrapDuckDuckGoHref } from '../../../activities/tools/duckduckgo-html.js';
import { decodeHtmlEntities, htmlFragmentText } from '../../../activities/tools/html-text.js';

const fixture = (name: string) =>
  readFileSync(join(import.meta.dirname, '..', '..', 'fixtures', 'duckduckgo', name), 'utf8').replaceAll(
    '{{QUERY}}',
    'parks in Rome',
  );

describe('DuckDuckGo HTML result page', () => {
  it('reads the organic results in page order: unwrapped URL, plain-text title and snippet', () => {
    const page = parseDuckDuckGoHtml(fixture('results.html'));
    assert.equal(page.hasResultList, true);
    assert.equal(page.challenge, false);
    assert.deepEqual(page.results, [
      {
        title: 'Villa Borghese gardens - Wikipedia',
        url: 'https://en.wikipedia.org/wiki/Villa_Borghese_gardens',
        snippet:
          'Villa Borghese is a landscape garden in Rome, containing a number of buildings, museums and attractions. ' +
          'It is the third largest public park in Rome (80 hectares or 197.7 acres) after the ones of Villa Doria ' +
          'Pamphili and Villa Ada.',
      },
      {
        title: 'The parks & villas of Rome | Turismo Roma',
        url: 'https://www.turismoroma.it/en/page/parks-and-villas?sort=name&lang=en',
        snippet:
          "Rome's green heart: from the Pincio terrace to the Appian Way Regional Park – over 40 historic villas open " +
          'to the public…',
      },
      {
        title: 'Appia Antica Regional Park - Official site',
        url: 'https://www.parcoappiaantica.it/en/',
        snippet:
          'Over 4,580 hectares of countryside, aqueducts and catacombs along the Via Appia, from the Aurelian Walls ' +
          'to the Alban Hills.',
      },
      {
        title: '10 Best Parks in Rome for a Picnic, a Run or a Nap',
        url: 'https://www.romeing.it/best-parks-rome/',
        snippet:
          'Villa Ada, Villa Pamphili, the Orange Garden on the Aventine <and more>: where locals go when it gets hot.',
      },
      {
        title: 'Giardino degli Aranci – Rome, Italy - Atlas Obscura',
        url: 'https://www.atlasobscura.com/places/giardino-degli-aranci',
        snippet: '',
      },
      {
        title: "Villa Doria Pamphili: Rome's largest landscaped park",
        url: 'https://www.romeandroman.com/en/villa-doria-pamphili/',
        snippet: '184 hectares on the Janiculum: pine groves, a lake and the Casino del Bel Respiro.',
      },
    ]);
  });

  it('drops the ad, the repeated URL and the non-http destination', () => {
    const urls = parseDuckDuckGoHtml(fixture('results.html')).results.map((r) => r.url);
    assert.ok(!urls.some((u) => u.includes('y.js') || u.includes('romeparktours')));
    assert.equal(urls.filter((u) => u.includes('Villa_Borghese')).length, 1);
    assert.ok(!urls.some((u) => u.startsWith('javascript:')));
  });

  it('tells an empty result list from a page that is not a result list', () => {
    assert.deepEqual(parseDuckDuckGoHtml(fixture('no-results.html')), {
      results: [],
      hasResultList: true,
      challenge: false,
    });
    const unrelated = parseDuckDuckGoHtml('<html><body><p class="resultless">Moved</p></body></html>');
    assert.equal(unrelated.hasResultList, false);
  });

  it('recognises the bot challenge page', () => {
    const page = parseDuckDuckGoHtml(fixture('challenge.html'));
    assert.equal(page.challenge, true);
    assert.deepEqual(page.results, []);
  });

  it('ignores result markup inside comments, scripts and styles', () => {
    const html =
      '<div class="results"><!-- <a class="result__a" href="https://a.example/">commented</a> -->' +
      '<script>var s = \'<a class="result__a" href="https://b.example/">scripted</a>\';</script>' +
      '<a class="result__a" href="https://c.example/">real</a></div>';
    assert.deepEqual(
      parseDuckDuckGoHtml(html).results.map((r) => r.title),
      ['real'],
    );
  });

  it('survives attributes with ">" in quotes, unquoted values, nesting and unterminated markup', () => {
    const html =
      '<div class=results><h2 title="a > b"><a data-x=\'1>2\' class=result__a href=https://d.example/x>' +
      'Deep <span><span>nested</span></span> title</a></h2>' +
      '<a class="result__snippet">snippet <a>inner</a> tail</a>' +
      '<a class="result__a" href="https://e.example/">unterminated';
    assert.deepEqual(parseDuckDuckGoHtml(html).results, [
      { title: 'Deep nested title', url: 'https://d.example/x', snippet: 'snippet inner tail' },
      { title: 'unterminated', url: 'https://e.example/', snippet: '' },
    ]);
  });
});

describe('DuckDuckGo link unwrapping', () => {
  it('unwraps the //duckduckgo.com/l/?uddg= redirect, decoding the target once', () => {
    assert.equal(
      unwrapDuckDuckGoHref('//duckduckgo.com/l/?uddg=https%3A%2F%2Fexample.com%2Fa%3Fq%3D1%2526b%26c%3D2&rut=abc'),
      'https://example.com/a?q=1%26b&c=2',
    );
    assert.equal(
      unwrapDuckDuckGoHref('https://duckduckgo.com/l/?uddg=http%3A%2F%2Fexample.org%2F'),
      'http://example.org/',
    );
  });

  it('keeps direct links and refuses ads, internal, relative-only and non-http links', () => {
    assert.equal(unwrapDuckDuckGoHref('https://example.com/page'), 'https://example.com/page');
    for (const href of [
      'https://duckduckgo.com/y.js?ad_domain=x.example&u3=https%3A%2F%2Fx.example',
      '/html/?q=next',
      '//duckduckgo.com/l/?rut=no-target',
      '//duckduckgo.com/l/?uddg=https%3A%2F%2Fduckduckgo.com%2Fabout',
      '//duckduckgo.com/l/?uddg=data%3Atext%2Fhtml%2C%3Cb%3E',
      'mailto:someone@example.com',
      'http://[not a url',
    ]) {
      assert.equal(unwrapDuckDuckGoHref(href), null, href);
    }
  });
});

describe('HTML text', () => {
  it('decodes named, decimal and hex entities, leaving unknown names and invalid code points safe', () => {
    assert.equal(
      decodeHtmlEntities('a &amp; b &lt;c&gt; &#39;d&#x27; &hellip; &bogus; &#0; &#x110000;'),
      "a & b <c> 'd' … &bogus; \ufffd \ufffd",
    );
  });

  it('turns a highlighted fragment into collapsed plain text', () => {
    assert.equal(
      htmlFragmentText('  <strong>Rome</strong>&#x27;s\n\t<b>parks</b>&nbsp;&amp; villas<br/>today '),
      "Rome's parks & villas today",
    );
  });
});
