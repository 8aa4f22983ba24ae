// Opens the netbox dashboard in headless Chromium and reports what a person would see.
// Usage: node check_dashboard.cjs URL SCREENSHOT.png
// Prints one JSON object: table contents, the chart's presence, every request the page
// made, and console errors. The C++ test decides what is right.
const { chromium } = require("playwright-core");

(async () => {
  const [url, screenshot] = process.argv.slice(2);
  const origin = new URL(url).origin;
  const browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  const result = { requests: [], outside: [], console_errors: [], page_errors: [] };
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 1100 } });
    page.on("request", (r) => {
      result.requests.push(r.url());
      if (!r.url().startsWith(origin + "/") && !r.url().startsWith("data:")) result.outside.push(r.url());
    });
    page.on("console", (m) => { if (m.type() === "error") result.console_errors.push(m.text()); });
    page.on("pageerror", (e) => result.page_errors.push(String(e)));
    await page.goto(url, { waitUntil: "load" });
    // Two polls give the chart a rate to draw; wait for the tables to fill.
    await page.waitForFunction(() => document.querySelectorAll("#requests tbody tr:not(:has(.empty))").length > 0,
                               null, { timeout: 15000 });
    await page.waitForTimeout(4500);
    const text = (sel) => page.$$eval(sel, (rows) => rows.map((r) => r.innerText));
    result.tiles = {
      allow: await page.textContent("#t-allow"),
      deny: await page.textContent("#t-deny"),
    };
    result.denied_hosts = await text("#denied-hosts tbody tr");
    result.agents = await text("#agents tbody tr");
    result.denials = await text("#denials tbody tr");
    result.requests_table = await text("#requests tbody tr");
    result.events = await text("#events tbody tr");
    result.launches_at_first = await page.isVisible("#launches-panel");
    result.agent_page_at_first = await page.isVisible("#agent-page");
    result.chart_canvas = await page.$$eval("#chart canvas", (c) => c.length);
    result.chart_series = await page.$$eval("#chart .u-legend .u-series", (s) => s.map((e) => e.innerText.trim()));
    result.status = await page.textContent("#status");
    // What the chart holds (its series' sums per decision) and what it shows: pixels of the
    // deny line's colour on its canvas. The traffic came before the page opened, so only
    // the store's timeline can have put it there.
    result.chart_sums = await page.evaluate(() => {
      const names = chart.series.slice(1).map((s) => s.label);
      return Object.fromEntries(names.map((n, i) => [n, chart.data[i + 1].reduce((a, b) => a + b, 0)]));
    });
    result.chart_title = await page.textContent("#chart-title");
    result.deny_pixels = await page.$eval("#chart canvas", (c) => {
      const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 0; i < d.length; i += 4)
        if (Math.abs(d[i] - 0xe5) < 8 && Math.abs(d[i + 1] - 0x53) < 8 && Math.abs(d[i + 2] - 0x4b) < 8) n++;
      return n;
    });
    // An agent's page, from its link in the agents table: the view narrowed to it.
    await page.click("#agents tbody a");
    await page.waitForTimeout(1500);
    result.agent_page = {
      hash: await page.evaluate(() => location.hash),
      visible: await page.isVisible("#agent-page"),
      name: await page.textContent("#agent-name"),
      filter: await page.$eval("#f-agent", (s) => s.value),
      requests: await text("#requests tbody tr"),
      launches: await text("#launches tbody tr"),
    };
    await page.goto(url + "#agent=nobody-here", { waitUntil: "load" });
    await page.waitForTimeout(2500);
    result.other_agent_page = { name: await page.textContent("#agent-name"), requests: await text("#requests tbody tr") };
    await page.click("#agent-page a");
    await page.waitForTimeout(1500);
    result.back = { visible: await page.isVisible("#agent-page"), filter: await page.$eval("#f-agent", (s) => s.value) };
    // Filter by decision=deny and check the requests table follows.
    await page.selectOption("#f-decision", "deny");
    await page.waitForTimeout(1500);
    result.filtered_requests = await text("#requests tbody tr");
    await page.selectOption("#f-decision", "");
    await page.waitForTimeout(1000);
    await page.screenshot({ path: screenshot, fullPage: true });
  } catch (e) {
    result.error = String(e);
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify(result));
})();
