"""The HTML pages of TraceCup: public results, accounts, team dashboard and organizer console.

Server-rendered Django templates (``templates/web/``) progressively enhanced by
``static/js/tracecup.js``; every page works without JavaScript. Mounted at
the site root by ``contest.urls``.
"""
