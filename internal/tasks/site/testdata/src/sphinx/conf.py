project = 'Fixture Manual'
extensions = []
html_theme = 'alabaster'
