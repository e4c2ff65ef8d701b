"""System plug-ins of the regret benchmark (files, sqlite, postgres, imap, kubernetes, web apps)."""
