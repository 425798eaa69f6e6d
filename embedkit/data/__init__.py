"""Reading what the user brings: documents, files, tables and their columns, targets, named datasets."""
