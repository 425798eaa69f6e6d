"""The course's table: sparse counts to fine-tuned Transformers, one head per idea.

Each row is one lecture's model. Sequence heads read pretrained GloVe word vectors, so they
differ only in how they combine the words.
"""

PAIRS = [
    ("bow", "mlp"),                 # bag-of-words + MLP
    ("tfidf", "mlp"),               # TF-IDF + MLP
    ("learned", "linear"),          # embedding learned from scratch, averaged, linear layer
    ("glove", "linear"),            # frozen GloVe, averaged, linear layer
    ("learned", "mlp"),             # Deep Averaging Network (learned embedding, mean, MLP)
    ("glove-seq", "conv"),          # Conv1D over GloVe, max over time
    ("glove-seq", "rnn"),           # bidirectional LSTM over GloVe, max pooling
    ("glove-seq", "gru"),           # GRU over GloVe, last state
    ("glove-seq", "attention"),     # attention pooling over GloVe
    ("glove-seq", "selfattention"),  # self-attention (Transformer) blocks over GloVe
    ("minilm", "logreg"),           # frozen MiniLM sentence vectors + logistic regression
    ("passthrough", "finetune"),    # MiniLM fine-tuned end to end
]
