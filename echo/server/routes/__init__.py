"""The server's routes, one router per concern: login and tokens, the JSON API, the web pages."""
