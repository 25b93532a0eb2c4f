// Drives bin/api's Gotenberg routes with two Gotenberg clients nobody here
// wrote, pinned by api/client-check/package-lock.json: chromiumly and
// gotenberg-js-client. cmd/api's TestBinaries_GotenbergClients runs it
// (NODE_PATH is var/node-tools/node_modules) and checks the PDFs it writes
// into OUT_DIR.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { Chromiumly, UrlConverter, HtmlConverter, PDFEngines } = require('chromiumly');
const gjs = require('gotenberg-js-client');

const base = process.env.PDFEXPORT_URL;
const token = process.env.PDFEXPORT_TOKEN;
const pageURL = process.env.PAGE_URL;
const out = process.env.OUT_DIR;
const write = (name, buf) => fs.writeFileSync(path.join(out, name), buf);

async function streamToBuffer(stream) {
  const chunks = [];
  for await (const c of stream) chunks.push(c);
  return Buffer.concat(chunks);
}

async function main() {
  // Gotenberg's Basic authentication, the token as its password.
  Chromiumly.configure({ endpoint: base, username: 'api-server', password: token });
  const png = fs.readFileSync(path.join(out, 'logo.png'));

  write('chromiumly-url.pdf', await new UrlConverter().convert({ url: pageURL, properties: { landscape: true } }));

  const html = Buffer.from('<!doctype html><html><head><link rel="stylesheet" href="style.css"></head>' +
    '<body><h1>Chromiumly assets</h1><p class="gone">HIDDEN</p><img src="logo.png"></body></html>');
  write('chromiumly-html.pdf', await new HtmlConverter().convert({
    html,
    assets: [{ file: Buffer.from('.gone{display:none} h1::after{content:" STYLED"}'), name: 'style.css' }, { file: png, name: 'logo.png' }],
    footer: Buffer.from('<html><body><p style="font-size:8px">page <span class="pageNumber"></span></p></body></html>'),
    properties: { margin: { top: 0.5, bottom: 0.5, left: 0.5, right: 0.5 }, printBackground: true },
  }));

  write('chromiumly-merged.pdf', await PDFEngines.merge({
    files: [path.join(out, 'chromiumly-url.pdf'), path.join(out, 'chromiumly-html.pdf')],
  }));

  // The render gate: ten identical conversions at once.
  const same = Buffer.from('<!doctype html><p>Ten identical conversions</p>');
  const tens = await Promise.all(Array.from({ length: 10 }, () => new HtmlConverter().convert({ html: same })));
  tens.forEach((b, i) => write(`gate-${i}.pdf`, b));
  if (process.env.GATE_ONLY) return;

  // gotenberg-js-client speaks Gotenberg 6's paths; its documented way to
  // another path is adjust (its README, "Advanced fine adjustment").
  const client = gjs.gotenberg(base, { headers: { Authorization: 'Bearer ' + token } });
  const toPDF = gjs.pipe(client, gjs.convert, gjs.html, gjs.adjust({ url: base + '/forms/chromium/convert/html' }), gjs.please);
  write('gjs-html.pdf', await streamToBuffer(await toPDF({
    'index.html': '<!doctype html><link rel="stylesheet" href="style.css"><p>gotenberg-js-client <img src="logo.png"></p>',
    'style.css': 'p::after{content:" WITH-CSS"}',
    'logo.png': png,
  })));
  const toURL = gjs.pipe(client, gjs.convert, gjs.html, gjs.adjust({ url: base + '/forms/chromium/convert/url', fields: { url: pageURL } }), gjs.please);
  write('gjs-url.pdf', await streamToBuffer(await toURL({ 'index.html': '<p>unused: the url route reads the url field</p>' })));
  const merge = gjs.pipe(client, gjs.merge, gjs.adjust({ url: base + '/forms/pdfengines/merge' }), gjs.please);
  write('gjs-merged.pdf', await streamToBuffer(await merge({
    'a.pdf': fs.readFileSync(path.join(out, 'gjs-html.pdf')),
    'b.pdf': fs.readFileSync(path.join(out, 'gjs-url.pdf')),
  })));
}

main().catch((err) => {
  console.error(err && err.stack ? err.stack : err);
  process.exit(1);
});
