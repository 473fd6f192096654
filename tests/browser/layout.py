"""Checks of what a person sees, run inside the page: sideways scrolling, text overflowing its box,
chart geometry. Shared by the browser tests; each returns a list of problems (empty when fine), so
a failing assertion says what and where.
"""
from __future__ import annotations

#: Every visible box whose content is wider than the box (scrollWidth > clientWidth), and the page
#: itself. ``strict``: boxes that scroll sideways on purpose (tables in ``.table-scroll``, menus on a
#: phone) count too; at 1280 px nothing should need it.
OVERFLOW_JS = """(strict) => {
  const doc = document.documentElement;
  const problems = [];
  if (doc.scrollWidth > doc.clientWidth + 1) {
    problems.push(`the page scrolls sideways by ${doc.scrollWidth - doc.clientWidth}px`);
  }
  for (const el of document.querySelectorAll('body *')) {
    const hidden = 'svg, .visually-hidden, .skip-link, script, noscript, template, details:not([open]) > :not(summary)';
    if (el.closest(hidden)) continue;
    const cs = getComputedStyle(el);
    // clientWidth <= 1: visually hidden (for screen readers only)
    if (cs.display === 'none' || cs.display === 'inline' || cs.visibility === 'hidden' || el.clientWidth <= 1) continue;
    if (['INPUT', 'SELECT', 'TEXTAREA', 'PROGRESS', 'BUTTON'].includes(el.tagName)) continue;  // native widgets
    const over = el.scrollWidth - el.clientWidth;
    if (over <= 1) continue;
    const scroller = cs.overflowX === 'auto' || cs.overflowX === 'scroll';
    if (scroller && !strict) continue;
    const cls = typeof el.className === 'string' && el.className.trim() ? '.' + el.className.trim().split(/\\s+/).join('.') : '';
    const name = el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + cls;
    const text = el.textContent.trim().replace(/\\s+/g, ' ').slice(0, 50);
    problems.push(`${name} is ${over}px too narrow${scroller ? ' (scrolls)' : ''}: ${text}`);
  }
  return problems.slice(0, 8);
}"""

#: Point labels of scatter plots that overlap each other or a marker, legend or label text outside
#: its SVG, and scatter plots narrower than 90% of their column.
CHARTS_JS = """() => {
  const problems = [];
  const hit = (a, b) => a.left < b.right - 0.5 && a.right > b.left + 0.5 && a.top < b.bottom - 0.5 && a.bottom > b.top + 0.5;
  for (const fig of document.querySelectorAll('figure[data-chart]')) {
    const svg = fig.querySelector('svg');
    if (!svg) continue;
    const box = svg.getBoundingClientRect();
    const kind = fig.getAttribute('data-chart');
    // scatter plots take their column (up to 900 px); heatmap and map cells grow with it up to a readable size
    if (kind === 'scatter' && box.width < 0.9 * fig.clientWidth - 1 && box.width < 899) {
      problems.push(`${kind} plot is ${Math.round(box.width)}px wide in a ${fig.clientWidth}px column`);
    }
    for (const t of svg.querySelectorAll('text')) {
      const r = t.getBoundingClientRect();
      if (r.width && (r.right > box.right + 1 || r.left < box.left - 1 || r.bottom > box.bottom + 1 || r.top < box.top - 1)) {
        problems.push(`${kind}: text '${t.textContent}' is cut at the edge of the plot`);
      }
    }
    const labels = Array.from(svg.querySelectorAll('text.point-label')).map(t => t.getBoundingClientRect());
    const marks = Array.from(svg.querySelectorAll('circle, path, rect')).filter(m => !m.closest('.axis, .legend, defs'))
      .map(m => m.getBoundingClientRect()).filter(r => r.width < 20 && r.height < 20);
    labels.forEach((a, i) => {
      labels.slice(i + 1).forEach(b => { if (hit(a, b)) problems.push(`${kind}: two point labels overlap`); });
      marks.forEach(m => { if (hit(a, m)) problems.push(`${kind}: a point label covers a marker`); });
    });
  }
  return problems.slice(0, 8);
}"""


def overflow_problems(page, *, strict: bool) -> list[str]:
    return page.evaluate(OVERFLOW_JS, strict)


def chart_problems(page) -> list[str]:
    return page.evaluate(CHARTS_JS)
