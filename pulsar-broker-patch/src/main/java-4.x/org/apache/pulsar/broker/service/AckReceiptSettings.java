/*
 * Licensed to the Apache Software Foundation (ASF) under one
 * or more contributor license agreements.  See the NOTICE file
 * distributed with this work for additional information
 * regarding copyright ownership.  The ASF licenses this file
 * to you under the Apache License, Version 2.0 (the
 * "License"); you may not use this file except in compliance
 * with the License.  You may obtain a copy of the License at
 *
 *   http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing,
 * software distributed under the License is distributed on an
 * "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
 * KIND, either express or implied.  See the License for the
 * specific language governing permissions and limitations
 * under the License.
 */
package org.apache.pulsar.broker.service;

import java.util.Locale;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.apache.bookkeeper.mledger.AsyncCallbacks.MarkDeleteCallback;
import org.apache.pulsar.broker.ServiceConfiguration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The broker setting {@code ackReceiptWaitsForPersistence} (broker.conf; default false). When true, an ack that
 * asks for a receipt (a consumer with isAckReceiptEnabled) is answered once the cursor reports it durable, and with
 * an error when its write fails: the semantics 5.0 has since apache/pulsar#25528. When false, the receipt is sent
 * once the ack is applied in memory, as upstream 4.x does. Read from the configuration's properties, which keep
 * every key of broker.conf: ServiceConfiguration itself is not part of the drop-in.
 */
final class AckReceiptSettings {
    static final String WAITS_FOR_PERSISTENCE = "ackReceiptWaitsForPersistence";
    private static final Logger LOG = LoggerFactory.getLogger(AckReceiptSettings.class);
    // One ERROR per broker process for a setting it cannot honour, not one per consumer.
    private static final AtomicBoolean REPORTED = new AtomicBoolean();

    private AckReceiptSettings() {
    }

    static boolean waitsForPersistence(ServiceConfiguration config) {
        return parse(config.getProperties().getProperty(WAITS_FOR_PERSISTENCE), durableCompletion(), REPORTED,
                LOG::error);
    }

    /**
     * The setting's value: a value other than true or false, or true over a managed-ledger jar without durable
     * completion (upstream's, installed with only some of our jars), counts as false, reported once.
     */
    static boolean parse(String value, boolean durableCompletion, AtomicBoolean reported, Consumer<String> error) {
        if (value == null || value.isBlank()) {
            return false;
        }
        switch (value.trim().toLowerCase(Locale.ROOT)) {
            case "false":
                return false;
            case "true":
                if (durableCompletion) {
                    return true;
                }
                reportOnce(reported, error, WAITS_FOR_PERSISTENCE + "=true needs this fork's managed-ledger jar,"
                        + " whose cursor reports an ack complete once it is durable: with upstream's, receipts are"
                        + " sent once the ack is applied, as without the setting. Install all three jars"
                        + " (bin/drop-in install)");
                return false;
            default:
                reportOnce(reported, error, WAITS_FOR_PERSISTENCE + " must be true or false, not '" + value
                        + "': receipts are sent once the ack is applied, as without the setting");
                return false;
        }
    }

    private static void reportOnce(AtomicBoolean reported, Consumer<String> error, String message) {
        if (reported.compareAndSet(false, true)) {
            error.accept(message);
        }
    }

    // Our managed-ledger's callbacks tell "accepted" (applied, not durable) from complete; upstream's have no such
    // method, and complete a throttled ack at once.
    private static boolean durableCompletion() {
        try {
            MarkDeleteCallback.class.getMethod("markDeleteAccepted", Object.class);
            return true;
        } catch (NoSuchMethodException e) {
            return false;
        }
    }
}
