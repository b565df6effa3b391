"""ffsession end-to-end harness: drives a real headless Firefox ESR over Marionette."""
