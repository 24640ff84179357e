"""wav2vec2: wav2vec 2.0 base (transformers Wav2Vec2ForPreTraining) self-supervised pretraining on LibriSpeech."""
