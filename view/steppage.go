package view

import (
	"fmt"
	"net/url"
	"strconv"

	"github.com/polyloop/polyloop"
)

// parsePage reads the page parameter: 0 when absent, else a number from 1
// to polyloop.MaxViewPage (a larger one could overflow an offset).
func parsePage(v url.Values) (int, error) {
	p := v.Get("page")
	if p == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > polyloop.MaxViewPage {
		return 0, fmt.Errorf("page=%q: expected a page number from 1 to %d", p, polyloop.MaxViewPage)
	}
	return n, nil
}

// window is one page of a run's steps (or a comparison's rows): items
// [From, To) of N, page Page of Pages, with links to the others.
type window struct {
	Page, Pages int
	From, To, N int
	// First, Prev, Next and Last link to those pages ("" on the page
	// itself or where there is none).
	First, Prev, Next, Last string
}

// newWindow is page page (0: the first, or the last when last is set) of
// n items, per a page, linked by link(page).
func newWindow(n, per, page int, last bool, link func(page int) string) window {
	pages := max(1, (n+per-1)/per)
	if page == 0 {
		page = 1
		if last {
			page = pages
		}
	}
	w := window{Page: page, Pages: pages, N: n}
	w.From = min((page-1)*per, n) // page ≤ MaxViewPage: no overflow for any per a server takes
	w.To = min(w.From+per, n)
	if page > 1 {
		w.First, w.Prev = link(1), link(min(page-1, pages))
	}
	if page < pages {
		w.Next, w.Last = link(page+1), link(pages)
	}
	return w
}

// Paged reports whether there is more than one page.
func (w window) Paged() bool { return w.Pages > 1 }

// pageOf is the page that holds item i.
func pageOf(i, per int) int { return i/per + 1 }
