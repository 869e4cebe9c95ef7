#!/usr/bin/Rscript
# Times Rtsne (the R package around bhtsne, van der Maaten's Barnes-Hut t-SNE; Debian r-cran-rtsne)
# on X.csv (no header) with the given theta (0 = its exact method), perplexity, iterations, seed
# and threads (0 = all cores), on the array as given (no PCA, no normalisation, no duplicate
# check), writes the map to OUT.csv and prints one JSON line. Only the call to Rtsne is timed.
# rtsne.R X.csv THETA PERPLEXITY ITERS SEED THREADS OUT.csv
args <- commandArgs(trailingOnly = TRUE)
suppressMessages(library(Rtsne))
X <- as.matrix(read.csv(args[1], header = FALSE))
theta <- as.numeric(args[2])
perplexity <- as.numeric(args[3])
iters <- as.integer(args[4])
seed <- as.integer(args[5])
threads <- as.integer(args[6])
set.seed(seed)
t0 <- proc.time()[["elapsed"]]
fit <- Rtsne(X, dims = 2, perplexity = perplexity, theta = theta, max_iter = iters, pca = FALSE,
             normalize = FALSE, check_duplicates = FALSE, num_threads = threads, verbose = FALSE)
seconds <- proc.time()[["elapsed"]] - t0
write.table(fit$Y, args[7], sep = ",", row.names = FALSE, col.names = FALSE)
cat(sprintf(paste0('{"rtsne": "%s", "theta": %g, "n": %d, "iterations": %d, "seed": %d, "threads": %d, ',
                   '"seconds": %.6f}\n'),
            as.character(packageVersion("Rtsne")), theta, nrow(X), iters, seed, threads, seconds))
