#!/usr/bin/env node
// Drives agentry's web chat page (`GET /` of `agentry serve`) in headless
// Chromium, the way a person would: enters the API key if the page asks for
// one, starts a new chat, sends each message and waits for its reply, then
// reloads the page and opens the chat again so its messages come back from
// the server. Prints ONE JSON object on stdout:
//
//   {"sessionId", "live": STATE, "reloaded": STATE, "waitingSeen": [STATE],
//    "consoleErrors": [...], "pageErrors": [...], "networkErrors": [...],
//    "pwned": window.__pwned or null}
//
// STATE is what the message list holds:
//   {"messages":  [{"role", "text", "html"}],          user | assistant | error
//    "toolCalls": [{"name", "open", "arguments", "result", "error"}],
//    "links":     [{"href", "text", "rel", "target"}],
//    "approvals": [{"callId", "text", "input"}],       calls a durable run waits on
//    "elements":  {"script": n, "img": n, "iframe": n}}
//
// `consoleErrors` leaves out Chromium's "Failed to load resource: ... status
// of N" lines; those responses are in `networkErrors` as {"status", "method",
// "url"} (a 401 is expected there once when the server wants a key).
// Exit code 0 on success; 1 with a message on stderr on failure (a timeout,
// a page that asks for a key without --key, ...); 2 on bad usage.
//
// Usage:
//   node npm/web/drive-chat-page.mjs --url http://127.0.0.1:PORT [--key KEY]
//     --message "text" [--message "second"] [--screenshot path.png]
//     [--timeout-ms 120000] [--page-dir DIR] [--decide approve|deny]
//
// --decide: when a reply ends with calls waiting for approval (a durable
// run), record the page's state in `waitingSeen` (and the first prompt in
// a screenshot beside --screenshot's, named *-waiting.png), then press Approve (or
// fill a reason and press Deny) on each prompt, waiting for the run to go on.
// --timeout-ms bounds each wait (one reply, one load); the whole run is
// bounded by it times (messages + 3). --screenshot saves a full-page PNG of
// the conversation before the reload (or of the page at the failure).
// --page-dir DIR is for developing the page only: index.html, chat.js and
// chat.css are served from DIR (with the server's CSP) instead of from the
// server, so the page can be tried without rebuilding the binary.

import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { chromium } from 'playwright-core';

const USAGE = 'usage: drive-chat-page.mjs --url URL [--key KEY] --message TEXT [--message TEXT]... '
  + '[--screenshot PATH] [--timeout-ms MS] [--page-dir DIR] [--decide approve|deny]';

// The Content-Security-Policy the server sends with the page (page.rs).
const POLICY = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
  + "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

function parseArgs(argv) {
  const options = { messages: [], timeoutMs: 120000 };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[i + 1];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    i++;
    switch (flag) {
      case '--url': options.url = value; break;
      case '--key': options.key = value; break;
      case '--message': options.messages.push(value); break;
      case '--screenshot': options.screenshot = value; break;
      case '--timeout-ms': options.timeoutMs = Number(value); break;
      case '--page-dir': options.pageDir = value; break;
      case '--decide':
        if (!['approve', 'deny'].includes(value)) throw new Error('--decide takes approve or deny');
        options.decide = value;
        break;
      default: throw new Error(`unknown option ${flag}`);
    }
  }
  if (!options.url) throw new Error('--url is required');
  if (!options.messages.length) throw new Error('at least one --message is required');
  if (!(options.timeoutMs > 0)) throw new Error('--timeout-ms must be a positive number');
  return options;
}

// What the message list holds, read in the page.
function domState() {
  const list = document.querySelector('[data-testid="messages"]');
  const all = (selector) => Array.from(list.querySelectorAll(selector));
  const parts = (message) => Array.from(message.querySelectorAll('[data-testid="message-content"]'));
  return {
    messages: all('[data-testid="message"]').map((m) => ({
      role: m.dataset.role,
      text: parts(m).map((p) => p.innerText.trim()).filter(Boolean).join('\n\n'),
      html: parts(m).map((p) => p.innerHTML).join(''),
    })),
    toolCalls: all('[data-testid="tool-call"]').map((d) => ({
      name: d.dataset.toolName,
      open: d.open,
      arguments: d.querySelector('[data-testid="tool-arguments"]')?.textContent ?? null,
      result: d.querySelector('[data-testid="tool-result"]')?.textContent ?? null,
      error: d.dataset.error === 'true',
    })),
    links: all('a').map((a) => ({
      href: a.getAttribute('href'),
      text: a.textContent,
      rel: a.getAttribute('rel'),
      target: a.getAttribute('target'),
    })),
    approvals: all('[data-testid="approval"]').map((a) => ({
      callId: a.dataset.callId,
      text: a.querySelector('.approval-text')?.textContent ?? null,
      input: a.querySelector('[data-testid="approval-input"]')?.textContent ?? null,
    })),
    elements: {
      script: all('script').length,
      img: all('img').length,
      iframe: all('iframe').length,
    },
  };
}

// Runs `action`; a failure says what was being done (Playwright's own
// message, first line, without colours).
async function step(what, action) {
  try {
    return await action();
  } catch (error) {
    const reason = String(error && error.message || error).replace(/\x1b\[[0-9;]*m/g, '').split('\n')[0];
    throw new Error(`${what}: ${reason}`);
  }
}

// A full-page PNG. The sidebar and the composer stick to the window, which
// a full-page capture would show mid-page, so they are unstuck for it.
async function fullScreenshot(page, file) {
  const unstick = (on) => {
    for (const node of document.querySelectorAll('.sidebar, .composer')) {
      node.style.position = on ? 'static' : '';
      node.style.height = on && node.classList.contains('sidebar') ? 'auto' : '';
    }
  };
  await page.evaluate(unstick, true);
  await page.screenshot({ path: file, fullPage: true });
  await page.evaluate(unstick, false);
}

async function main() {
  let options;
  try {
    options = parseArgs(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`${error.message}\n${USAGE}\n`);
    return 2;
  }
  const { url, key, messages, screenshot, timeoutMs, pageDir, decide } = options;
  const waitingSeen = [];   // the page's state each time a run waited for a decision
  const origin = new URL(url).origin;

  const consoleErrors = [];
  const pageErrors = [];
  const networkErrors = [];
  let pwned = null;
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  // Nothing may hang past this, whatever happens.
  const watchdog = setTimeout(() => {
    process.stderr.write(`drive-chat-page: gave up after ${timeoutMs * (messages.length + 3)} ms\n`);
    browser.close().finally(() => process.exit(1));
  }, timeoutMs * (messages.length + 3));
  let page;
  try {
    const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
    page = await context.newPage();
    page.setDefaultTimeout(timeoutMs);
    page.on('console', (message) => {
      if (message.type() !== 'error') return;
      if (/^Failed to load resource: the server responded with a status of \d+/.test(message.text())) return;
      consoleErrors.push(message.text());
    });
    page.on('pageerror', (error) => pageErrors.push(String(error && error.message || error)));
    page.on('response', (response) => {
      if (response.status() >= 400) {
        networkErrors.push({ status: response.status(), method: response.request().method(), url: response.url() });
      }
    });

    if (pageDir) {
      // Page development only: the three page files come from DIR.
      const files = { '/': ['index.html', 'text/html; charset=utf-8'],
        '/page/chat.js': ['chat.js', 'text/javascript; charset=utf-8'],
        '/page/chat.css': ['chat.css', 'text/css; charset=utf-8'] };
      await context.route((u) => u.origin === origin && u.pathname in files, async (route) => {
        const [name, type] = files[new URL(route.request().url()).pathname];
        await route.fulfill({
          status: 200,
          headers: { 'content-type': type, 'content-security-policy': POLICY, 'x-content-type-options': 'nosniff' },
          body: await readFile(path.join(pageDir, name)),
        });
      });
    }

    const ready = () => step('waiting for the chat page to start (is this the chat page?)',
      () => page.waitForSelector('body[data-ready="true"]', { state: 'attached' }));
    await step(`opening ${url}`, () => page.goto(url));
    await ready();

    // The key form, when the server wants a key.
    if (await page.isVisible('[data-testid="api-key"]')) {
      if (key === undefined) throw new Error('the page asks for an API key: pass --key');
      await page.fill('[data-testid="api-key"]', key);
      await page.click('[data-testid="save-key"]');
      await step('waiting for the key to be checked', () => page.waitForFunction(() => document.body.dataset.auth === 'ok'
        || document.querySelector('#key-note')?.textContent.includes('refused')));
      if (await page.evaluate(() => document.body.dataset.auth) !== 'ok') {
        throw new Error('the server refused the API key');
      }
    }

    await page.click('[data-testid="new-chat"]');
    const sessionId = await page.evaluate(() => document.body.dataset.session);
    if (!sessionId) throw new Error('no session after clicking "New chat"');

    // Each message, waiting for its turn to end.
    for (const text of messages) {
      const turns = await page.evaluate(() => Number(document.body.dataset.turns || 0));
      await page.fill('[data-testid="input"]', text);
      await page.click('[data-testid="send"]');
      await step(`waiting for the reply to ${JSON.stringify(text)}`, () => page.waitForFunction((before) =>
        Number(document.body.dataset.turns || 0) > before && document.body.dataset.busy === 'false', turns));
      // A durable run that waits: note the prompts, then decide each as told.
      while (decide && await page.isVisible('[data-testid="approval"]')) {
        waitingSeen.push(await page.evaluate(domState));
        if (screenshot && waitingSeen.length === 1) {
          await fullScreenshot(page, screenshot.replace(/(\.png)?$/, '-waiting.png'));
        }
        const decisions = await page.evaluate(() => Number(document.body.dataset.decisions || 0));
        if (decide === 'deny') {
          await page.fill('[data-testid="approval"] [data-testid="approval-reason"]', 'Not this one, thanks.');
        }
        await page.click(`[data-testid="approval"] [data-testid="${decide}"]`);
        await step(`waiting for the run to go on after "${decide}"`, () => page.waitForFunction((before) =>
          Number(document.body.dataset.decisions || 0) > before, decisions));
      }
    }

    const live = await page.evaluate(domState);
    pwned = await page.evaluate(() => window.__pwned ?? null);
    if (screenshot) await fullScreenshot(page, screenshot);

    // Reload, open the chat again: its messages come from the server.
    await step('reloading the page', () => page.reload());
    await ready();
    await page.waitForSelector('body[data-loading="false"]', { state: 'attached' });
    const loads = await page.evaluate(() => Number(document.body.dataset.loads || 0));
    await step(`opening session ${sessionId} from the list`, () =>
      page.click(`[data-testid="session"][data-session-id="${sessionId}"] [data-testid="session-open"]`));
    await step('waiting for the messages to load', () => page.waitForFunction((before) =>
      Number(document.body.dataset.loads || 0) > before && document.body.dataset.loading === 'false', loads));
    const reloaded = await page.evaluate(domState);
    pwned = pwned ?? await page.evaluate(() => window.__pwned ?? null);

    process.stdout.write(JSON.stringify({ sessionId, live, reloaded, waitingSeen, consoleErrors, pageErrors, networkErrors, pwned }) + '\n');
    return 0;
  } catch (error) {
    process.stderr.write(`drive-chat-page: ${error.message}\n`);
    if (consoleErrors.length || pageErrors.length) {
      process.stderr.write(`console errors: ${JSON.stringify(consoleErrors)}\npage errors: ${JSON.stringify(pageErrors)}\n`);
    }
    if (screenshot && page) await fullScreenshot(page, screenshot).catch(() => {});
    return 1;
  } finally {
    clearTimeout(watchdog);
    await browser.close().catch(() => {});
  }
}

process.exitCode = await main();
