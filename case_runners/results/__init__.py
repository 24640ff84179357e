"""Result records (versioned), summaries over rounds, and their rendering."""
