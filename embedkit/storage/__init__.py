"""What embedkit keeps on disk: model folders, atomic writes and outputs, fetched resources, vector files."""
