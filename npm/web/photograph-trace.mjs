#!/usr/bin/env node
// Opens a trace in Arize Phoenix's UI in headless Chromium, waits for its
// span tree, selects the run's root span, and saves a PNG of the view.
// Prints the page's visible text on stdout (the test checks the span names
// in it). Exit code 0 on success; 1 with a message on stderr on failure.
//
// Usage: node npm/web/photograph-trace.mjs TRACE_URL OUT.png [--timeout-ms 60000]

import { chromium } from 'playwright-core';

const [url, out] = process.argv.slice(2);
const at = process.argv.indexOf('--timeout-ms');
const timeout = at > 0 ? Number(process.argv[at + 1]) : 60000;
if (!url || !out) {
  console.error('usage: photograph-trace.mjs TRACE_URL OUT.png [--timeout-ms N]');
  process.exit(2);
}

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-dev-shm-usage'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 800 } });
  await page.goto(url, { waitUntil: 'networkidle', timeout });
  // The span tree lists the run's spans once the trace has loaded.
  await page.getByText('execute_tool calculator').first().waitFor({ timeout });
  await page.getByText('invoke_agent agentry').first().click();
  await page.waitForLoadState('networkidle', { timeout });
  await page.screenshot({ path: out });
  console.log(await page.innerText('body'));
} catch (error) {
  console.error(String(error));
  process.exitCode = 1;
} finally {
  await browser.close();
}
